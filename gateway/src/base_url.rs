//! The base URL of a server the edge build calls (its primary, its write
//! node), read from a setting: http:// or https://, a host, no user info,
//! an optional path prefix. Both halves of the edge build parse one; this
//! crate is the one they share.

#[derive(Debug, PartialEq, Eq)]
pub struct BaseUrl {
    pub https: bool,
    /// Host and port, as given.
    pub authority: String,
    /// The URL's path, without a trailing slash ("" for the root).
    pub prefix: String,
}

impl BaseUrl {
    /// `url` as the value of `setting` (named in the errors; the URL itself
    /// is configuration, not a secret, but only its shape is described).
    pub fn parse(setting: &str, url: &str) -> Result<BaseUrl, String> {
        let (https, rest) = match url.split_once("://") {
            Some(("http", rest)) => (false, rest),
            Some(("https", rest)) => (true, rest),
            _ => return Err(format!("{setting} must start with http:// or https://")),
        };
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        if authority.is_empty() || authority.contains('@') {
            return Err(format!("{setting} needs a host (and no user info)"));
        }
        let prefix = match path.trim_end_matches('/') {
            "" => String::new(),
            p => format!("/{p}"),
        };
        Ok(BaseUrl { https, authority: authority.to_string(), prefix })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_base_url_is_a_scheme_a_host_and_a_prefix() {
        assert_eq!(BaseUrl::parse("X", "https://db.example/base/").unwrap(), BaseUrl { https: true, authority: "db.example".into(), prefix: "/base".into() });
        assert_eq!(BaseUrl::parse("X", "http://10.0.0.5:8081/").unwrap().prefix, "");
        for bad in ["ftp://x", "x", "http://", "https://user@host/"] {
            assert!(BaseUrl::parse("X", bad).unwrap_err().starts_with("X "), "{bad}");
        }
    }
}
