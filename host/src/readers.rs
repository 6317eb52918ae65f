//! A few long-lived threads that run reads (issue 11: the hop off the tokio
//! workers). Component calls cannot run on a worker (wasmtime-wasi's sync
//! bindings block on a runtime of their own when a guest touches a stream),
//! and tokio's blocking pool spread the reads over dozens of threads, each
//! woken for one read and parked again: most of a read's context switches.
//! Here a handful of threads take reads from one queue; under load a
//! thread finds the next read waiting and never parks. The queue is a
//! mutex and a condition variable: an idle reader sleeps at once (a
//! spinning channel's `sched_yield` loop cost 8% of the CPU on two cores).
//!
//! A read may be slow (a large page, a guest near its deadline), so the
//! queue is short: when `QUEUED_PER_THREAD` reads per thread are waiting
//! or running, the next goes to tokio's blocking pool as before.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

type Task = Box<dyn FnOnce() + Send>;

/// Reads per thread that may wait or run before the blocking pool takes
/// the next one.
const QUEUED_PER_THREAD: usize = 4;

pub struct Readers {
    queue: Arc<Queue>,
    limit: usize,
    /// Reads queued or running on the pool's threads.
    taken: Arc<AtomicUsize>,
}

#[derive(Default)]
struct Queue {
    tasks: Mutex<VecDeque<Task>>,
    ready: Condvar,
}

impl Queue {
    fn push(&self, task: Task) {
        self.tasks.lock().unwrap_or_else(|e| e.into_inner()).push_back(task);
        self.ready.notify_one();
    }

    fn pop(&self) -> Task {
        let mut tasks = self.tasks.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(task) = tasks.pop_front() {
                return task;
            }
            tasks = self.ready.wait(tasks).unwrap_or_else(|e| e.into_inner());
        }
    }
}

impl Readers {
    /// `threads` threads; at least one.
    pub fn start(threads: usize) -> std::io::Result<Readers> {
        let threads = threads.max(1);
        let queue = Arc::new(Queue::default());
        let taken = Arc::new(AtomicUsize::new(0));
        for n in 0..threads {
            let queue = queue.clone();
            let taken = taken.clone();
            std::thread::Builder::new().name(format!("reader-{n}")).spawn(move || loop {
                queue.pop()();
                taken.fetch_sub(1, Ordering::AcqRel);
            })?;
        }
        Ok(Readers { queue, limit: threads * QUEUED_PER_THREAD, taken })
    }

    /// Runs `f` on a reader thread, or on tokio's blocking pool when the
    /// readers have enough waiting; `None` if it panicked.
    pub async fn run<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
        if self.taken.fetch_add(1, Ordering::AcqRel) >= self.limit {
            self.taken.fetch_sub(1, Ordering::AcqRel);
            return tokio::task::spawn_blocking(f).await.ok();
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        let task: Task = Box::new(move || {
            // A panic stays in the task: the thread goes on, the caller
            // sees a closed channel.
            if let Ok(v) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
                let _ = tx.send(v);
            }
        });
        self.queue.push(task);
        rx.await.ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn reads_run_on_the_pool_and_overflow_to_the_blocking_pool() {
        let readers = Arc::new(Readers::start(1).unwrap());
        let name = readers.run(|| std::thread::current().name().map(String::from)).await.unwrap();
        assert!(name.unwrap().starts_with("reader-"));
        // Slow reads fill the thread and its queue; the next runs elsewhere
        // at once.
        let (release, wait) = std::sync::mpsc::channel::<()>();
        let wait = Arc::new(std::sync::Mutex::new(wait));
        let slow: Vec<_> = (0..QUEUED_PER_THREAD)
            .map(|_| {
                let (r, w) = (readers.clone(), wait.clone());
                tokio::spawn(async move { r.run(move || w.lock().unwrap().recv().ok()).await })
            })
            .collect();
        while readers.taken.load(Ordering::Acquire) < QUEUED_PER_THREAD {
            tokio::task::yield_now().await;
        }
        let third = readers.run(|| std::thread::current().name().map(String::from)).await.unwrap();
        assert!(!third.unwrap_or_default().starts_with("reader-"));
        for _ in 0..QUEUED_PER_THREAD {
            release.send(()).unwrap();
        }
        for s in slow {
            s.await.unwrap();
        }
        // A panicking read answers None; the pool goes on.
        assert!(readers.run(|| panic!("boom")).await.is_none());
        assert_eq!(readers.run(|| 7).await, Some(7));
    }
}
