//! A canned HTTP server on 127.0.0.1 that keeps every request head it
//! reads: for the tests that check what the recorder sends (credentials,
//! an API's headers) rather than what it measures.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The request heads a server read, in order.
pub type Heads = Arc<Mutex<Vec<String>>>;

/// One canned answer: status line, content type, and a body made from the
/// request head (so the server can echo what it was sent).
#[derive(Clone, Copy)]
pub struct Answer {
    /// The status line after `HTTP/1.1 `.
    pub status: &'static str,
    /// The `Content-Type`.
    pub content_type: &'static str,
    /// The body, made from the request head.
    pub body: fn(&str) -> String,
}

/// Starts a server giving `answer` to every request; its URL (`http://ADDR`)
/// and the heads it reads.
pub fn serve(answer: Answer) -> (String, Heads) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("local addr");
    let heads: Heads = Arc::default();
    let kept = heads.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let kept = kept.clone();
            std::thread::spawn(move || {
                let _ = converse(stream, answer, &kept);
            });
        }
    });
    (format!("http://{addr}"), heads)
}

/// Answers every request on one connection until the client closes it.
fn converse(stream: TcpStream, answer: Answer, heads: &Heads) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut writer = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    loop {
        let head = read_head(&mut reader)?;
        heads.lock().unwrap().push(head.clone());
        let body = (answer.body)(&head);
        write!(
            writer,
            "HTTP/1.1 {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n\r\n{body}",
            answer.status,
            answer.content_type,
            body.len()
        )?;
        writer.flush()?;
    }
}

/// Reads one request head, then skips its `Content-Length` bytes of body.
fn read_head(reader: &mut BufReader<TcpStream>) -> std::io::Result<String> {
    let mut head = String::new();
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        if line.trim_end().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        head.push_str(&line);
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body)?;
    Ok(head)
}

/// The value of header `name` in a request head.
pub fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}
