//! `bench-hello ADDR`: answers every request with a small fixed body. The
//! ceiling bench/run.sh measures the service against, on the same machine
//! in the same run.

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;

async fn hello(_: Request<hyper::body::Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    Ok(Response::builder().header("content-type", "application/json").body(Full::new(Bytes::from_static(b"{\"data\":{\"hello\":\"world\"}}"))).expect("static response"))
}

#[tokio::main(worker_threads = 2)]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:0".into());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("{}", listener.local_addr()?);
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        tokio::spawn(async move {
            let _ = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), hyper::service::service_fn(hello)).await;
        });
    }
}
