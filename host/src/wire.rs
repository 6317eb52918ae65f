//! The connection's bytes. hyper answers a request it cannot parse (a
//! malformed request line or header, a head larger than its buffer, a URI
//! longer than 64 KiB) itself, before any service runs, with a bare status
//! line and no body. [`EnvelopeIo`] wraps the socket and puts the failure
//! envelope into those answers, so every error answer of the service, even
//! one produced before routing, is JSON a client can read.
//!
//! The automatic answers are recognised by their form: a 400, 414 or 431
//! status line whose head has no `content-type` (every answer of ours has
//! one). They are the last thing written on the connection (hyper closes it
//! after), so the replacement is simply written in their place.
//!
//! hyper's `http1::Builder` offers no hook for these answers (issue 49
//! looked); tests/api/wire.rs sends one request for each parse failure
//! hyper answers and checks the answers of ours pass through.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use switchboard_gateway::Failure;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

pub struct EnvelopeIo<T> {
    inner: T,
    /// A replacement answer still to write, and how much of it is written.
    pending: Option<(Vec<u8>, usize)>,
}

impl<T> EnvelopeIo<T> {
    pub fn new(inner: T) -> Self {
        EnvelopeIo { inner, pending: None }
    }
}

/// The envelope answer for hyper's automatic answer in `head`, if it is one.
fn replacement(head: &[u8]) -> Option<Vec<u8>> {
    let (status, code, message) = if head.starts_with(b"HTTP/1.1 400 ") {
        (400, "malformed_request", "the request could not be parsed as HTTP/1.1 (its request line, a header or its framing is malformed)")
    } else if head.starts_with(b"HTTP/1.1 414 ") {
        (414, "uri_too_long", "the request's URI is longer than 65534 bytes")
    } else if head.starts_with(b"HTTP/1.1 431 ") {
        (431, "headers_too_large", "the request's head (request line and headers) is too large: at most 100 headers and about 400 KiB")
    } else {
        return None;
    };
    let end = head.windows(4).position(|w| w == b"\r\n\r\n")?;
    if head[..end].to_ascii_lowercase().windows(13).any(|w| w == b"content-type:") {
        return None;
    }
    let reason = std::str::from_utf8(&head[13..head[..end].iter().position(|b| *b == b'\r')?]).ok()?;
    let request_id = uuid::Uuid::new_v4().to_string();
    let body = Failure::new(status, "validation", code, message).envelope(&request_id).to_string();
    let answer = format!("HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nx-request-id: {request_id}\r\nconnection: close\r\n\r\n{body}", body.len());
    Some(answer.into_bytes())
}

impl<T: AsyncWrite + Unpin> EnvelopeIo<T> {
    /// Writes what is pending of a replacement answer.
    fn drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while let Some((bytes, written)) = self.pending.as_mut() {
            if *written == bytes.len() {
                self.pending = None;
                break;
            }
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &bytes[*written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            *written += n;
        }
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for EnvelopeIo<T> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for EnvelopeIo<T> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        ready!(self.drain(cx))?;
        if let Some(answer) = replacement(buf) {
            // Taken whole; written by this and the following polls.
            self.pending = Some((answer, 0));
            let _ = self.drain(cx)?;
            return Poll::Ready(Ok(buf.len()));
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(mut self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[io::IoSlice<'_>]) -> Poll<io::Result<usize>> {
        ready!(self.drain(cx))?;
        // An automatic answer is a head alone, in the first slice.
        if let Some(answer) = bufs.first().and_then(|first| replacement(first)) {
            self.pending = Some((answer, 0));
            let _ = self.drain(cx)?;
            return Poll::Ready(Ok(bufs.iter().map(|b| b.len()).sum()));
        }
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.drain(cx))?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.drain(cx))?;
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn automatic_answers_become_envelopes_and_ours_are_left_alone() {
        let bare = b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\ndate: Mon, 23 Nov 2026 00:00:00 GMT\r\n\r\n";
        let answer = String::from_utf8(replacement(bare).unwrap()).unwrap();
        assert!(answer.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: application/json\r\n"), "{answer}");
        let body: serde_json::Value = serde_json::from_str(answer.split("\r\n\r\n").nth(1).unwrap()).unwrap();
        assert_eq!(body["error"]["code"], "headers_too_large");
        assert_eq!(body["ok"], false);
        let ours = b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}";
        assert!(replacement(ours).is_none());
        assert!(replacement(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n").is_none());
    }
}
