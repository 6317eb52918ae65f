//! Call recordings: signed links that expire, streamed with byte ranges.

use super::*;

#[test]
fn recordings_are_signed_expire_and_stream_with_ranges() {
    let dir = DataDir::new();
    let s = Server::start_with(&dir.0, &["--carrier-setting", "step-delay-ms=20", "--recording-link-ttl-ms", "2000"]);
    let t = tenant(&dir.0, "all");
    admin(&dir.0, &["credits", "add", "--business", &t.business, "--microcredits", "5000000"]);
    let mut c = Calls { s, t, dir, agent: String::new(), everyone: String::new() };
    c.agent = c.agent_with(json!({"firstGreeting": "Hello, this is Acme calling."}));
    let id = c.call("+15550001234");
    let r = c.ended(&id);
    check("CallDetail", &r);
    assert_eq!(r["call"]["recordingAvailable"], json!(true));
    assert_eq!(r["recordingFilename"], json!(format!("call-{id}.wav")));
    let (url, download) = (r["recordingUrl"].as_str().unwrap().to_string(), r["recordingDownloadUrl"].as_str().unwrap().to_string());
    assert!(url.contains(&format!("/recordings/{id}/")) && !url.contains("memo"), "{url}");
    let http = reqwest::blocking::Client::new();
    let get = |u: &str, range: Option<&str>| {
        let mut rq = http.get(u);
        if let Some(r) = range {
            rq = rq.header("range", r);
        }
        rq.send().unwrap()
    };
    // The whole file: a playable WAV of the connected time, no key needed.
    let whole = get(&url, None);
    assert_eq!(whole.status(), 200);
    assert_eq!(whole.headers()["content-type"], "audio/wav");
    assert_eq!(whole.headers()["accept-ranges"], "bytes");
    assert!(whole.headers()["content-disposition"].to_str().unwrap().starts_with("inline"));
    let length: usize = whole.headers()["content-length"].to_str().unwrap().parse().unwrap();
    let bytes = whole.bytes().unwrap();
    assert_eq!(bytes.len(), length);
    assert_eq!((&bytes[..4], &bytes[8..12]), (&b"RIFF"[..], &b"WAVE"[..]));
    let seconds = r["call"]["durationSeconds"].as_u64().unwrap();
    let audio_seconds = (length as u64 - 44) / 16_000;
    assert!(audio_seconds + 1 >= seconds && audio_seconds <= seconds, "{audio_seconds} s of audio for a {seconds} s call");
    // Ranges as players send them.
    let part = get(&url, Some("bytes=100-199"));
    assert_eq!(part.status(), 206);
    assert_eq!(part.headers()["content-range"].to_str().unwrap(), format!("bytes 100-199/{length}"));
    assert_eq!(&part.bytes().unwrap()[..], &bytes[100..200]);
    let tail = get(&url, Some("bytes=-10"));
    assert_eq!(tail.status(), 206);
    assert_eq!(&tail.bytes().unwrap()[..], &bytes[length - 10..]);
    // Several ranges: the whole file with 200, as HTTP allows (no
    // multipart/byteranges; players ask for one range).
    let several = get(&url, Some("bytes=0-9,100-199"));
    assert_eq!(several.status(), 200);
    assert!(several.headers().get("content-range").is_none());
    assert_eq!(several.headers()["accept-ranges"], "bytes");
    assert_eq!(&several.bytes().unwrap()[..], &bytes[..]);
    let beyond = get(&url, Some(&format!("bytes={length}-")));
    assert_eq!(beyond.status(), 416);
    assert_eq!(beyond.headers()["content-range"].to_str().unwrap(), format!("bytes */{length}"));
    // The download link is an attachment.
    let d = get(&download, None);
    assert_eq!(d.status(), 200);
    assert_eq!(d.headers()["content-disposition"].to_str().unwrap(), format!("attachment; filename=\"call-{id}.wav\""));
    // Tampered links: refused, never the file.
    let refused = |u: &str| {
        let r = get(u, None);
        let status = r.status().as_u16();
        let body: Value = r.json().unwrap();
        (status, body["error"]["code"].as_str().unwrap().to_string())
    };
    let stranger = tenant(&c.dir.0, "all");
    let forged = [
        url.replace(&c.t.business, &stranger.business),
        url.replace("d=inline", "d=attachment"),
        url.replace("&s=", "&s=00"),
        url.replace(&format!("/recordings/{id}/"), &format!("/recordings/{}/", uuid::Uuid::new_v4())),
    ];
    for f in &forged {
        assert_eq!(refused(f), (403, "recording_link_invalid".to_string()), "{f}");
    }
    // A call that never connected has no recording.
    let busy = c.call("+15550002222");
    let r = c.ended(&busy);
    assert_eq!((r["call"]["recordingAvailable"].clone(), r.get("recordingUrl")), (json!(false), None));
    // Links expire (two seconds here, five minutes by default).
    std::thread::sleep(std::time::Duration::from_millis(3_100));
    assert_eq!(refused(&url), (403, "recording_link_expired".to_string()));
    // A fresh read of the report gives a fresh link.
    let fresh = c.report(&id)["recordingUrl"].as_str().unwrap().to_string();
    assert_eq!(get(&fresh, Some("bytes=0-3")).status(), 206);
}
