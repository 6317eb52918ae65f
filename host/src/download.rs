//! Streamed answers: a download whose first piece has a `next-cursor` goes
//! out with chunked transfer encoding while a task pulls the following
//! pieces from the component, one call (a fresh instance, the normal
//! deadline, a concurrency permit) per piece, on the request's read
//! snapshot. A bounded channel sits between the pull and the response body,
//! so at most a piece or two is in memory whatever the size of the answer.
//!
//! The status is sent with the first piece, so a later error cannot change
//! it: the body is aborted instead (hyper closes the connection without the
//! terminating chunk, so the client sees an incomplete response, never a
//! silently short file), and the error is logged. A client that goes away
//! drops the body, which closes the channel and stops the pull before the
//! next piece.

use crate::pipeline::Continuation;
use crate::shared::{BoxError, Shared};
use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// A client that takes no piece for this long is cut off: its stream holds
/// a read snapshot (and so holds back WAL checkpoints) while it waits.
const STALL_LIMIT: Duration = Duration::from_secs(60);

pub enum Msg {
    Data(Bytes),
    /// The last piece was sent. A channel that closes without it means the
    /// stream was aborted.
    End,
}

/// The response body of a streamed answer.
pub struct PieceBody {
    first: Option<Bytes>,
    rx: mpsc::Receiver<Msg>,
    done: bool,
}

impl Body for PieceBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        if let Some(first) = this.first.take() {
            return Poll::Ready(Some(Ok(Frame::data(first))));
        }
        match this.rx.poll_recv(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Some(Msg::Data(b))) => Poll::Ready(Some(Ok(Frame::data(b)))),
            Poll::Ready(Some(Msg::End)) => {
                this.done = true;
                Poll::Ready(None)
            }
            Poll::Ready(None) => {
                this.done = true;
                Poll::Ready(Some(Err("the streamed answer was interrupted".into())))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

/// For the access line written when the stream ends.
pub struct AccessLine {
    pub request_id: String,
    pub method: String,
    pub path: String,
    pub operation: &'static str,
    pub status: u16,
    pub started: Instant,
}

/// A body fed through a bounded channel by a producer of our own (the
/// recording stream); the producer ends it with [`Msg::End`], and a channel
/// closed without it aborts the response.
pub fn channel_body() -> (mpsc::Sender<Msg>, PieceBody) {
    let (tx, rx) = mpsc::channel(1);
    (tx, PieceBody { first: None, rx, done: false })
}

/// Starts pulling the pieces after `first` and returns the body that sends
/// them.
pub fn stream(shared: Arc<Shared>, first: Vec<u8>, rest: Continuation, line: AccessLine) -> PieceBody {
    // One piece waits in the channel while the next is produced.
    let (tx, rx) = mpsc::channel(1);
    let sent = first.len() as u64;
    tokio::spawn(pull(shared, rest, tx, sent, line));
    PieceBody { first: Some(Bytes::from(first)), rx, done: false }
}

async fn pull(shared: Arc<Shared>, mut rest: Continuation, tx: mpsc::Sender<Msg>, mut sent: u64, line: AccessLine) {
    let end = loop {
        if tx.is_closed() {
            break "client_gone";
        }
        let Ok(permit) = shared.permits.acquire().await else { break "aborted" };
        let app = shared.clone();
        let call = tokio::task::spawn_blocking(move || {
            let piece = app.app.next_piece(&mut rest);
            (rest, piece)
        });
        let (r, piece) = match call.await {
            Ok(done) => done,
            Err(_) => {
                // The blocking call panicked: the continuation (and its
                // connection) went with it.
                drop(tx);
                tracing::error!(requestId = %line.request_id, "a streamed answer's pull panicked");
                return finish(&line, sent, "aborted");
            }
        };
        drop(permit);
        rest = r;
        let piece = match piece {
            Ok(p) => p,
            Err(why) => {
                tracing::error!(requestId = %line.request_id, bytes = sent, reason = %why, "streamed answer aborted");
                break "aborted";
            }
        };
        let len = piece.bytes.len() as u64;
        match tokio::time::timeout(STALL_LIMIT, tx.send(Msg::Data(Bytes::from(piece.bytes)))).await {
            Ok(Ok(())) => sent += len,
            Ok(Err(_)) => break "client_gone",
            Err(_) => break "client_stalled",
        }
        if !piece.more {
            match tokio::time::timeout(STALL_LIMIT, tx.send(Msg::End)).await {
                Ok(Ok(())) => break "complete",
                Ok(Err(_)) => break "client_gone",
                Err(_) => break "client_stalled",
            }
        }
    };
    // Without `End` the body reports an error: the response is aborted.
    drop(tx);
    let app = shared.clone();
    let _ = tokio::task::spawn_blocking(move || app.app.end_stream(rest)).await;
    finish(&line, sent, end);
}

fn finish(line: &AccessLine, sent: u64, end: &str) {
    crate::logging::streamed(&line.request_id, &line.method, &line.path, line.operation, line.status, line.started.elapsed().as_micros(), sent, end);
}
