//! Reading the parts of a [`Request`]: path and query parameters, the JSON
//! body and the page size.

use crate::{fail, is_uuid, Failure, Request};
use serde::de::DeserializeOwned;

/// The first query parameter called `name`.
pub fn query<'a>(req: &'a Request, name: &str) -> Option<&'a str> {
    req.query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

/// A query parameter that is absent or empty counts as absent.
pub fn query_nonempty<'a>(req: &'a Request, name: &str) -> Option<&'a str> {
    query(req, name).filter(|v| !v.is_empty())
}

/// An optional uuid query parameter (`400 invalid_query_parameter` if malformed).
pub fn query_uuid<'a>(req: &'a Request, name: &str) -> Result<Option<&'a str>, Failure> {
    match query_nonempty(req, name) {
        None => Ok(None),
        Some(v) if is_uuid(v) => Ok(Some(v)),
        Some(_) => Err(fail::validation("invalid_query_parameter", format!("query parameter `{name}` must be a uuid"))),
    }
}

/// Narrows a list's `sql` (a `SELECT … WHERE …` whose parameters so far are
/// `params`) by each of `filters` present in the query: `(name, column,
/// uuid)` adds `AND column = ?n` with the parameter's value (a uuid
/// lower-cased; `400 invalid_query_parameter` if malformed).
pub fn narrow(req: &Request, sql: &mut String, params: &mut Vec<crate::Value>, filters: &[(&str, &str, bool)]) -> Result<(), Failure> {
    for (name, column, uuid) in filters {
        let value = if *uuid { query_uuid(req, name)?.map(str::to_ascii_lowercase) } else { query_nonempty(req, name).map(String::from) };
        if let Some(v) = value {
            params.push(v.into());
            *sql += &format!(" AND {column} = ?{}", params.len());
        }
    }
    Ok(())
}

/// A path parameter, e.g. `contactId`.
pub fn path<'a>(req: &'a Request, name: &str) -> Option<&'a str> {
    req.path_params.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

/// A path parameter that names a resource by uuid. A malformed or missing id
/// cannot name anything, so it is reported as `not_found` with `code`.
pub fn path_uuid<'a>(req: &'a Request, name: &str, code: &str, what: &str) -> Result<&'a str, Failure> {
    match path(req, name) {
        Some(v) if is_uuid(v) => Ok(v),
        _ => Err(fail::not_found(code, format!("{what} not found"))),
    }
}

/// The page size from `limit`: `default` when absent, 1..=`max` otherwise.
pub fn limit(req: &Request, default: u32, max: u32) -> Result<u32, Failure> {
    match query_nonempty(req, "limit") {
        None => Ok(default),
        Some(v) => match v.parse::<u32>() {
            Ok(n) if (1..=max).contains(&n) => Ok(n),
            _ => Err(fail::validation("invalid_limit", format!("query parameter `limit` must be an integer from 1 to {max}"))),
        },
    }
}

/// The JSON body deserialised into `T` (`400 invalid_body` if absent or mistyped).
pub fn body<T: DeserializeOwned>(req: &Request) -> Result<T, Failure> {
    let text = req.body.as_deref().ok_or_else(|| fail::invalid_body("a JSON body is required"))?;
    serde_json::from_str(text).map_err(fail::invalid_body)
}
