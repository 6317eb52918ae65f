//! The log lines' way to stderr: a caller appends its formatted line to a
//! shared buffer and goes on; one thread (`log-writer`) writes what has
//! gathered, woken by the first line after a write and then waiting
//! [`GATHER`] for more, so a busy server wakes it a few hundred times a
//! second rather than once a line.
//!
//! Why not `tracing-appender`'s non-blocking writer, which this replaces:
//! it hands every line over a channel whose receiving thread is woken per
//! line when it sleeps. At 20,000 access lines a second that thread ran
//! about 6,800 times a second and took a tenth of the server's CPU on two
//! cores (bench/README.md, "the access log's writer"); it has no way to
//! gather lines for a moment, and no maintained crate does that.
//!
//! Lossy as before: past [`MAX_BUFFERED`] bytes waiting, new lines are
//! dropped (counted, and said in one line when there is room again), so a
//! full, slow or broken stderr never slows or stops a request.

use std::io::Write;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// How long the writer waits for more lines after the first one.
pub const GATHER: Duration = Duration::from_millis(5);
/// Bytes waiting for the writer beyond which lines are dropped.
pub const MAX_BUFFERED: usize = 16 << 20;
/// How long a stop waits for the last lines to be written: a stderr that
/// nobody reads must not keep the process from ending.
pub const LAST_WRITE: Duration = Duration::from_secs(1);

#[derive(Default)]
struct Pending {
    bytes: Vec<u8>,
    dropped: u64,
    closing: bool,
    /// The writer thread has written its last lines and ended.
    ended: bool,
}

#[derive(Default)]
struct Shared {
    pending: Mutex<Pending>,
    wake: Condvar,
}

/// Where a line is written: cheap to clone, one per event.
#[derive(Clone)]
pub struct Lines(Arc<Shared>);

/// Keeps the writer thread; dropping it writes what is left and ends it.
pub struct Guard {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

/// Starts the writer thread over `out`.
pub fn start(out: impl Write + Send + 'static) -> (Lines, Guard) {
    let shared = Arc::new(Shared::default());
    let writer = Arc::clone(&shared);
    let thread = std::thread::Builder::new().name("log-writer".into()).spawn(move || write_gathered(&writer, out)).ok();
    (Lines(Arc::clone(&shared)), Guard { shared, thread })
}

fn write_gathered(shared: &Shared, mut out: impl Write) {
    let mut batch = Vec::new();
    loop {
        let (dropped, closing) = {
            let mut p = shared.pending.lock().unwrap_or_else(|e| e.into_inner());
            while p.bytes.is_empty() && !p.closing {
                p = shared.wake.wait(p).unwrap_or_else(|e| e.into_inner());
            }
            if !p.closing {
                // More lines come while it waits: one write for all of them.
                drop(p);
                std::thread::sleep(GATHER);
                p = shared.pending.lock().unwrap_or_else(|e| e.into_inner());
            }
            std::mem::swap(&mut p.bytes, &mut batch);
            (std::mem::take(&mut p.dropped), p.closing)
        };
        // A broken stderr loses lines, as the channel did; the server goes on.
        let _ = out.write_all(&batch);
        if dropped > 0 {
            let _ = writeln!(out, r#"{{"level":"WARN","message":"log lines dropped","dropped":{dropped}}}"#);
        }
        let _ = out.flush();
        batch.clear();
        if closing {
            shared.pending.lock().unwrap_or_else(|e| e.into_inner()).ended = true;
            shared.wake.notify_all();
            return;
        }
    }
}

impl Write for Lines {
    fn write(&mut self, line: &[u8]) -> std::io::Result<usize> {
        let mut p = self.0.pending.lock().unwrap_or_else(|e| e.into_inner());
        if p.bytes.len() + line.len() > MAX_BUFFERED {
            p.dropped += 1;
            return Ok(line.len());
        }
        let first = p.bytes.is_empty();
        p.bytes.extend_from_slice(line);
        drop(p);
        if first {
            self.0.wake.notify_one();
        }
        Ok(line.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Lines {
    type Writer = Lines;

    fn make_writer(&'a self) -> Lines {
        self.clone()
    }
}

impl Drop for Guard {
    /// Writes what is left, waiting at most [`LAST_WRITE`] (a thread stuck
    /// on a full pipe is left behind, as the process ends anyway).
    fn drop(&mut self) {
        let mut p = self.shared.pending.lock().unwrap_or_else(|e| e.into_inner());
        p.closing = true;
        self.shared.wake.notify_all();
        let (p, _) = self.shared.wake.wait_timeout_while(p, LAST_WRITE, |p| !p.ended).unwrap_or_else(|e| e.into_inner());
        let ended = p.ended;
        drop(p);
        if let Some(thread) = self.thread.take().filter(|_| ended) {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the writer thread wrote, shared with the test.
    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<Vec<u8>>>);

    impl Write for Sink {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn every_line_is_written_in_order_and_the_guard_writes_the_rest() {
        let sink = Sink::default();
        let (lines, guard) = start(sink.clone());
        let writers: Vec<_> = (0..4)
            .map(|t| {
                let mut lines = lines.clone();
                std::thread::spawn(move || {
                    for i in 0..1000 {
                        lines.write_all(format!("{t} {i}\n").as_bytes()).unwrap();
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        drop(guard);
        let text = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        assert_eq!(text.lines().count(), 4000);
        for t in 0..4 {
            let mine: Vec<usize> = text.lines().filter_map(|l| l.strip_prefix(&format!("{t} "))).map(|i| i.parse().unwrap()).collect();
            assert_eq!(mine, (0..1000).collect::<Vec<_>>(), "thread {t}'s lines in order");
        }
    }

    #[test]
    fn a_line_is_written_soon_without_a_guard_drop() {
        let sink = Sink::default();
        let (mut lines, _guard) = start(sink.clone());
        lines.write_all(b"one\n").unwrap();
        let started = std::time::Instant::now();
        while sink.0.lock().unwrap().is_empty() {
            assert!(started.elapsed() < Duration::from_secs(5), "the line was never written");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(&*sink.0.lock().unwrap(), b"one\n");
    }

    #[test]
    fn a_stop_waits_at_most_a_second_for_a_stderr_that_never_takes_a_line() {
        struct Never;
        impl Write for Never {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                std::thread::sleep(Duration::from_secs(3600));
                Ok(0)
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let (mut lines, guard) = start(Never);
        lines.write_all(b"stuck\n").unwrap();
        std::thread::sleep(GATHER * 4);
        let started = std::time::Instant::now();
        drop(guard);
        assert!(started.elapsed() < LAST_WRITE * 3, "the stop waited {:?}", started.elapsed());
    }

    #[test]
    fn lines_past_the_bound_are_dropped_and_counted() {
        /// A stderr that blocks until told to go on.
        #[derive(Clone)]
        struct Stuck(Sink, Arc<(Mutex<bool>, Condvar)>);
        impl Write for Stuck {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                let (go, cv) = &*self.1;
                let mut go = go.lock().unwrap();
                while !*go {
                    go = cv.wait(go).unwrap();
                }
                self.0.write(b)
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let sink = Sink::default();
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        let (mut lines, guard) = start(Stuck(sink.clone(), Arc::clone(&gate)));
        lines.write_all(b"first\n").unwrap();
        // The writer takes "first" and blocks on the stuck stderr.
        std::thread::sleep(GATHER * 4);
        let line = vec![b'x'; 1 << 20];
        for _ in 0..20 {
            lines.write_all(&line).unwrap();
        }
        *gate.0.lock().unwrap() = true;
        gate.1.notify_all();
        drop(guard);
        let text = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        assert!(text.starts_with("first\n"));
        assert_eq!(text.matches('x').count(), 16 << 20, "16 lines of 1 MiB fit the bound");
        assert!(text.ends_with("{\"level\":\"WARN\",\"message\":\"log lines dropped\",\"dropped\":4}\n"), "{}", &text[text.len() - 100..]);
    }
}
