//! Keyset pagination over id-ordered lists (ids are uuid v7, so id order is
//! creation order): one place for `limit`, `cursor` and `nextCursor`.

use crate::cursor::Cursor;
use crate::db::{self, Row};
use crate::{req, FromRow, HResult, Request, Value};
use switchboard_sql::decode_rows;

/// Default and largest page sizes of every list.
pub const DEFAULT_LIMIT: u32 = 50;
pub const MAX_LIMIT: u32 = 200;

/// Runs `select` (a `SELECT … WHERE …` whose first column is the id, without
/// ORDER BY or LIMIT) for the page the request's `cursor` and `limit` ask
/// for, ordered by `id_column`. Returns the rows, each read as `T` (a tuple
/// of the columns' types, or a row struct), and the next page's cursor
/// (None on the last page).
pub fn by_id<T: FromRow>(req: &Request, select: &str, params: Vec<Value>, id_column: &str) -> HResult<(Vec<T>, Option<String>)> {
    let (rows, next) = ordered(req, select, params, id_column, false)?;
    Ok((decode_rows(rows)?, next))
}

/// Like [`by_id`], newest first (a log).
pub fn by_id_newest_first<T: FromRow>(req: &Request, select: &str, params: Vec<Value>, id_column: &str) -> HResult<(Vec<T>, Option<String>)> {
    let (rows, next) = ordered(req, select, params, id_column, true)?;
    Ok((decode_rows(rows)?, next))
}

fn ordered(req: &Request, select: &str, mut params: Vec<Value>, id_column: &str, newest_first: bool) -> HResult<(Vec<Row>, Option<String>)> {
    let limit = req::limit(req, DEFAULT_LIMIT, MAX_LIMIT)?;
    let (past, direction) = if newest_first { ("<", "DESC") } else { (">", "ASC") };
    let mut sql = select.to_string();
    if let Some(c) = req::query_nonempty(req, "cursor").map(Cursor::parse).transpose()? {
        params.push(c.id.to_ascii_lowercase().into());
        sql += &format!(" AND {id_column} {past} ?{}", params.len());
    }
    sql += &format!(" ORDER BY {id_column} {direction} LIMIT {}", limit + 1);
    let mut rows = db::query(&sql, &params)?;
    let next = if rows.len() > limit as usize {
        rows.truncate(limit as usize);
        // The caller's select decides the row's width; its first column is the id.
        rows.last().and_then(|r| r.first()).map(|id| Cursor::from_id(&id.text()).encode())
    } else {
        None
    };
    Ok((rows, next))
}
