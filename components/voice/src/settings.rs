//! A business's settings of ours that belong to no one resource
//! (operations 92 and 93, `GET` and `PATCH /business-settings`): for now
//! the country a phone number written without its country code is taken
//! in (`defaultPhoneCountry`, ISO 3166-1 alpha-2; null: the reader's
//! browser's), which every phone input of the console uses. The answer
//! carries the country's calling code (`defaultCallingCode`), from the
//! `phonenumber` crate's copy of libphonenumber's metadata, which also
//! decides which codes are countries with a calling code.
//!
//! Reading takes `contacts:read`, changing `contacts:write` (an owner's
//! in the console). Kept in `business_settings` (migration 0042).

use serde::Deserialize;
use serde_json::{json, Value as J};
use std::str::FromStr;
use switchboard_guest::db;
use switchboard_guest::{fail, now, ok, params, req, Failure, HResult, Request, Success};

/// The calling code of an ISO 3166-1 alpha-2 country (upper case), if it
/// is a country with one.
pub fn calling_code(country: &str) -> Option<u16> {
    let id = phonenumber::country::Id::from_str(country).ok()?;
    phonenumber::metadata::DATABASE.by_id(id.as_ref()).map(|m| m.country_code())
}

fn answer(country: Option<String>, updated_at: Option<String>) -> J {
    let code = country.as_deref().and_then(calling_code).map(|c| c.to_string());
    json!({"settings": {"defaultPhoneCountry": country, "defaultCallingCode": code, "updatedAt": updated_at}})
}

pub fn get(r: &Request) -> HResult<Success> {
    let row = db::query_one_as::<(Option<String>, String)>("SELECT phone_country, updated_at FROM business_settings WHERE business_id = ?1", &params![&r.business_id])?;
    let (country, at) = match row {
        Some((country, at)) => (country, Some(at)),
        None => (None, None),
    };
    ok(&answer(country, at))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Change {
    /// Absent: unchanged; null: none (the browser's).
    #[serde(default, deserialize_with = "present")]
    default_phone_country: Option<Option<String>>,
}

fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

/// A country code as sent, checked: two capital letters naming a country
/// with a calling code.
fn checked(country: &str) -> Result<String, Failure> {
    if calling_code(country).is_none() {
        return Err(fail::validation(
            "unknown_phone_country",
            format!("defaultPhoneCountry must be a country's ISO 3166-1 alpha-2 code with a calling code, such as US, GB or DE (not {})", fail::quote(country, 8)),
        ));
    }
    Ok(country.to_string())
}

pub fn update(r: &Request) -> HResult<Success> {
    let biz = r.business_id.as_str();
    let c: Change = req::body(r)?;
    let Some(country) = c.default_phone_country else {
        return Err(fail::validation("nothing_to_change", "send defaultPhoneCountry (a country code, or null for none)"));
    };
    let country = country.as_deref().map(checked).transpose()?;
    let at = now();
    db::execute(
        "INSERT INTO business_settings (business_id, phone_country, updated_at) VALUES (?1, ?2, ?3) \
         ON CONFLICT (business_id) DO UPDATE SET phone_country = excluded.phone_country, updated_at = excluded.updated_at",
        &params![biz, country.as_deref(), &at],
    )?;
    ok(&answer(country, Some(at)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn countries_have_their_calling_codes() {
        assert_eq!(calling_code("US"), Some(1));
        assert_eq!(calling_code("GB"), Some(44));
        assert_eq!(calling_code("DE"), Some(49));
        assert_eq!(calling_code("KE"), Some(254));
        for not in ["us", "UK", "XX", "", "USA", "AQ"] {
            assert_eq!(calling_code(not), None, "{not}");
        }
    }
}
