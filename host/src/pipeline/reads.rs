//! A read's side of the pipeline: one read transaction on a snapshot (on a
//! blocking thread, or on the tokio worker when async reads are on), and a
//! streamed answer's pieces until its end.

use super::*;

impl App {
    /// Runs a read in one read transaction. Runs on a blocking thread.
    pub fn read(&self, r: Read) -> Answer {
        let Read { admitted, db, req, component, request_id } = r;
        let mut answer = self.read_inner(&admitted, db, req, component, &request_id);
        answer.operation = admitted.op.id.as_str();
        answer
    }

    /// Whether `r` runs on the tokio worker ([`App::read_on_worker`]): the
    /// async path is on and its operation was never seen calling out
    /// (`engine/reads.rs`).
    pub fn reads_on_worker(&self, r: &Read) -> bool {
        self.components.reads_on_worker(&r.req.operation)
    }

    /// [`App::read`] on the calling task (a tokio worker): the component
    /// runs with `call_async`, yielding the worker at each epoch tick. A
    /// read whose component reaches an import that calls out comes back as
    /// [`OnWorker::Blocking`], for a reader thread to finish
    /// ([`App::finish_blocking`]) on the same snapshot.
    pub async fn read_on_worker(&self, r: Read) -> OnWorker {
        let Read { admitted, db, req, component, request_id } = r;
        let Some((db, conn)) = self.begin_read(&admitted, db) else {
            return OnWorker::Done(Answer::failure(&unavailable(), &request_id).for_operation(admitted.op.id.as_str()));
        };
        match self.components.call_async(component, conn, &req, self.deadline).await {
            AsyncAnswer::Answered(conn, result) => {
                let mut answer = self.finish_read(&admitted, db, conn, req, component, result, &request_id);
                answer.operation = admitted.op.id.as_str();
                OnWorker::Done(answer)
            }
            AsyncAnswer::Blocking(conn) => OnWorker::Blocking(Box::new(Begun { admitted, db, conn, req, component, request_id })),
        }
    }

    /// The rest of a read [`App::read_on_worker`] handed back: the blocking
    /// call, on its connection and snapshot. Runs on a blocking thread.
    pub fn finish_blocking(&self, b: Begun) -> Answer {
        let Begun { admitted, db, conn, req, component, request_id } = b;
        let (conn, result) = self.components.call(component, conn, &req, self.deadline);
        let mut answer = self.finish_read(&admitted, db, conn, req, component, result, &request_id);
        answer.operation = admitted.op.id.as_str();
        answer
    }

    fn read_inner(&self, a: &Admitted, db: Arc<Db>, req: wit::Request, component: &'static str, request_id: &str) -> Answer {
        let Some((db, conn)) = self.begin_read(a, db) else { return Answer::failure(&unavailable(), request_id) };
        let (conn, result) = self.components.call(component, conn, &req, self.deadline);
        self.finish_read(a, db, conn, req, component, result, request_id)
    }

    /// A connection of the business's database with its read transaction
    /// begun, and that database; `None` when the database cannot be read.
    fn begin_read(&self, a: &Admitted, db: Arc<Db>) -> Option<(Arc<Db>, crate::db::Connection)> {
        let conn = db.read_conn().map(|c| c.detach()).ok()?;
        // One read transaction: every query of the handler sees one snapshot.
        // READONLY (libSQL's DEFERRED) also keeps a replica's reads local.
        if db::execute(&conn, "BEGIN READONLY", vec![]).is_err() {
            return None;
        }
        // A business moved away from this database (`moves.rs`; the same
        // check as a write's, `exchange::mutation`) is read
        // where main places it now; while its move is under way, this
        // database's frozen copy is still its own.
        if let Some(business) = a.business_id.as_deref() {
            if switchboard_gateway::storage::business_moving(&conn, business).unwrap_or(false) {
                self.dbs.forget(business);
                if let Ok(home) = self.home(Some(business)) {
                    if !Arc::ptr_eq(&home.db, &db) {
                        let _ = db::execute(&conn, "ROLLBACK", vec![]);
                        db.give_back(conn);
                        return self.begin_read(a, home.db);
                    }
                }
            }
        }
        Some((db, conn))
    }

    /// The answer of a read's call; its transaction ends here, unless the
    /// answer is the first piece of a stream.
    #[allow(clippy::too_many_arguments)]
    fn finish_read(
        &self,
        a: &Admitted,
        db: Arc<Db>,
        conn: crate::db::Connection,
        req: wit::Request,
        component: &'static str,
        result: Result<Result<wit::Success, wit::Failure>, CallError>,
        request_id: &str,
    ) -> Answer {
        match result {
            // The first piece of a streamed answer: the snapshot stays open
            // for the pieces that follow.
            Ok(Ok(wit::Success { status, body: Some(piece), .. })) if (200..300).contains(&status) && piece.next_cursor.is_some() => {
                let mut request = req;
                request.stream_cursor = piece.next_cursor.clone();
                let rest = Continuation { conn: Some(conn), db, request, component };
                self.download(status, piece, Some(rest), request_id)
            }
            result => {
                let _ = db::execute(&conn, "ROLLBACK", vec![]);
                db.give_back(conn);
                self.render(a, result, request_id)
            }
        }
    }

    /// A raw answer from a body piece; `rest` pulls the following pieces.
    pub(super) fn download(&self, status: u16, piece: wit::BodyPiece, rest: Option<Continuation>, request_id: &str) -> Answer {
        let valid = |v: &str| http::HeaderValue::from_str(v).is_ok();
        if piece.content_type.is_empty() || !valid(&piece.content_type) || !piece.content_disposition.as_deref().is_none_or(valid) {
            if let Some(rest) = rest {
                self.end_stream(rest);
            }
            tracing::error!(requestId = %request_id, "component answered a download with an invalid content type or disposition");
            return Answer::failure(&Failure::internal("the handler produced an invalid answer"), request_id);
        }
        Answer {
            status,
            content_type: "",
            body: String::new(),
            headers: Vec::new(),
            operation: "-",
            download: Some(Download { content_type: piece.content_type, content_disposition: piece.content_disposition, first: piece.bytes, rest }),
        }
    }

    /// Calls the component for the next piece of a streamed answer, in a
    /// fresh instance with the normal request deadline, on the stream's read
    /// snapshot. Runs on a blocking thread. An error (a trap, a deadline, a
    /// failure answer, a success without a piece, a cursor that does not
    /// move) ends the stream: the status is already sent, so the caller
    /// aborts the body; the text is for the log.
    pub fn next_piece(&self, c: &mut Continuation) -> Result<Piece, String> {
        let conn = c.conn.take().ok_or("the stream has ended")?;
        let (conn, result) = self.components.call(c.component, conn, &c.request, self.deadline);
        c.conn = Some(conn);
        match result {
            Ok(Ok(wit::Success { status, body: Some(piece), .. })) if (200..300).contains(&status) => {
                if piece.next_cursor.is_some() && piece.next_cursor == c.request.stream_cursor {
                    return Err("the component answered a piece whose next cursor is the current one".into());
                }
                let more = piece.next_cursor.is_some();
                c.request.stream_cursor = piece.next_cursor;
                Ok(Piece { bytes: piece.bytes, more })
            }
            Ok(Ok(s)) => Err(format!("the component answered a continuation with status {} and no body piece", s.status)),
            Ok(Err(f)) => Err(format!("the component failed a continuation: {} {}", f.status, f.code)),
            Err(CallError::Deadline) => Err("a continuation passed its deadline".into()),
            Err(CallError::ResourceLimit) => Err("a continuation hit its memory limit".into()),
            Err(CallError::Capacity) => Err("no instance was free for a continuation".into()),
            Err(CallError::Trap(detail)) => Err(format!("a continuation trapped: {detail}")),
        }
    }

    /// Ends a streamed answer's read transaction and returns its connection
    /// to the pool. Runs on a blocking thread.
    pub fn end_stream(&self, mut c: Continuation) {
        if let Some(conn) = c.conn.take() {
            if db::execute(&conn, "ROLLBACK", vec![]).is_ok() {
                c.db.give_back(conn);
            }
        }
    }
}
