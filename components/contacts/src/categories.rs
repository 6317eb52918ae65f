//! listCategories, createCategory, deleteCategory.

use serde::Deserialize;
use serde_json::json;
use switchboard_guest::db;
use switchboard_guest::page;
use switchboard_guest::{created, fail, is_uuid, new_id, now, ok, params, req, HResult, Request, Success};

use crate::fields;
use crate::model::{self, violation, CategoryRow, CATEGORY_COLS};

/// Categories in creation order (ids are uuid v7), with contact counts.
pub fn list(req: &Request) -> HResult<Success> {
    let biz = req.business_id.as_str();
    let (rows, next) = page::by_id::<CategoryRow>(req, &format!("SELECT {CATEGORY_COLS} FROM categories WHERE business_id = ?1"), params![biz], "id")?;
    let categories = model::render_categories(biz, rows)?;
    ok(&json!({"categories": categories, "nextCursor": next}))
}

#[derive(Deserialize)]
struct CreateBody {
    name: String,
}

fn find_by_name(biz: &str, name: &str) -> HResult<Option<serde_json::Value>> {
    let rows: Vec<CategoryRow> = db::query_as(&format!("SELECT {CATEGORY_COLS} FROM categories WHERE business_id = ?1 AND name = ?2 COLLATE NOCASE"), &params![biz, name])?;
    Ok(model::render_categories(biz, rows)?.into_iter().next())
}

/// Creates a category, or returns the existing one whose name matches
/// case-insensitively (`200`, `created: false`).
pub fn create(req: &Request) -> HResult<Success> {
    let biz = req.business_id.as_str();
    let body: CreateBody = req::body(req)?;
    let name = fields::category_name(&body.name).map_err(violation)?;
    if let Some(category) = find_by_name(biz, &name)? {
        return ok(&json!({"category": category, "created": false}));
    }
    let id = new_id();
    let now = now();
    db::execute_or("INSERT INTO categories (id, business_id, name, created_at) VALUES (?1, ?2, ?3, ?4)", &params![&id, biz, &name, &now], || {
        fail::conflict("category_name_exists", "a category with this `name` already exists")
    })?;
    created(&json!({"category": {"id": id, "name": name, "contactCount": 0, "createdAt": now}, "created": true}))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DeleteBody {
    category_id: String,
    confirm_name: String,
}

/// Deletes a category after name confirmation, refusing while any contact
/// has it as its only category.
pub fn delete(req: &Request) -> HResult<Success> {
    let biz = req.business_id.as_str();
    let body: DeleteBody = req::body(req)?;
    let cat = body.category_id.as_str();
    if !is_uuid(cat) {
        return Err(model::category_not_found(cat));
    }
    let stored_name = db::query_one_as::<String>("SELECT name FROM categories WHERE business_id = ?1 AND id = ?2", &params![biz, cat])?.ok_or_else(|| model::category_not_found(cat))?;
    if body.confirm_name != stored_name {
        return Err(fail::conflict("confirmation_mismatch", "`confirmName` must equal the category's exact current name"));
    }
    let p = params![biz, cat];
    let exclusive = db::query_one_as::<i64>(
        "SELECT COUNT(*) FROM contact_categories cc WHERE cc.business_id = ?1 AND cc.category_id = ?2 \
         AND NOT EXISTS (SELECT 1 FROM contact_categories o \
         WHERE o.contact_id = cc.contact_id AND o.business_id = ?1 AND o.category_id <> ?2)",
        &p,
    )?
    .unwrap_or(0);
    if exclusive > 0 {
        let who = if exclusive == 1 { "1 contact belongs".to_string() } else { format!("{exclusive} contacts belong") };
        return Err(fail::conflict(
            "category_has_exclusive_contacts",
            format!(
                "{who} only to this category and would be left without a category; \
                 delete them first with DELETE /api/v1/contacts and body {{\"businessId\", \"categoryId\"}}, \
                 or add them to another category"
            ),
        ));
    }
    db::execute("DELETE FROM contact_categories WHERE business_id = ?1 AND category_id = ?2", &p)?;
    db::execute("DELETE FROM categories WHERE business_id = ?1 AND id = ?2", &p)?;
    ok(&json!({"deleted": true, "categoryId": cat}))
}
