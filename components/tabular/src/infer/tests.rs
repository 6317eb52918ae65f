//! Type inference's unit tests: the kinds of cells, the type a column's
//! cells decide, how cells are interpreted (spreadsheet dates included),
//! and field keys derived from headers.

use super::*;

fn stats(cells: &[&str]) -> ColumnStats {
    let mut s = ColumnStats::default();
    for c in cells {
        s.add(c);
    }
    s
}

#[test]
fn kinds() {
    assert_eq!(classify("12"), Kind::Integer);
    assert_eq!(classify("-12"), Kind::Integer);
    assert_eq!(classify("0"), Kind::Integer);
    assert_eq!(classify("007"), Kind::LeadingZero);
    assert_eq!(classify("4155550123"), Kind::DigitString);
    assert_eq!(classify("12.50"), Kind::Number);
    assert_eq!(classify("1e5"), Kind::Number);
    assert_eq!(classify("TRUE"), Kind::Boolean);
    assert_eq!(classify("2024-02-29"), Kind::IsoDate);
    assert_eq!(classify("2023-02-29"), Kind::Text);
    assert_eq!(classify("03/04/2024"), Kind::SlashDate);
    assert_eq!(classify("2024-03-04T10:00:00Z"), Kind::DateTime);
    assert_eq!(classify("2024-03-04 10:00"), Kind::DateTime);
    assert_eq!(classify("+1 415 555 0123"), Kind::Phone);
    assert_eq!(classify("a@b.co"), Kind::Email);
    assert_eq!(classify("hello"), Kind::Text);
    assert_eq!(classify(" "), Kind::Empty);
    assert_eq!(classify("1.2.3"), Kind::Text);
}

#[test]
fn decisions() {
    assert_eq!(decide(&stats(&["1", "2", ""])), Decision { suggested: "integer", review: vec![] });
    assert_eq!(decide(&stats(&["1", "2.5"])).suggested, "number");
    assert!(decide(&stats(&["1", "2.5"])).review.is_empty());
    assert_eq!(decide(&stats(&["2024-01-01", "2024-01-02T10:00:00Z"])).suggested, "datetime");
    assert_eq!(decide(&stats(&["007", "12"])), Decision { suggested: "text", review: vec!["integer", "text"] });
    assert_eq!(decide(&stats(&["03/04/2024"])), Decision { suggested: "date", review: vec!["date", "text"] });
    assert_eq!(decide(&stats(&["4155550123", "+14155550124"])), Decision { suggested: "phone", review: vec!["phone", "integer"] });
    assert_eq!(decide(&stats(&["12", "abc"])), Decision { suggested: "text", review: vec!["text", "integer"] });
    assert_eq!(decide(&stats(&["", ""])).suggested, "text");
}

#[test]
fn interpretation() {
    assert_eq!(interpret("integer", " 42 ").unwrap(), Value::from(42));
    assert!(interpret("integer", "4x").is_err());
    assert_eq!(interpret("number", "12.50").unwrap(), serde_json::json!(12.5));
    assert_eq!(interpret("text", "007").unwrap(), Value::from("007"));
    assert_eq!(interpret("integer", "007").unwrap(), Value::from(7));
    assert_eq!(interpret("date", "03/04/2024").unwrap(), Value::from("2024-04-03"));
    assert_eq!(interpret("date", "12/31/2024").unwrap(), Value::from("2024-12-31"));
    assert_eq!(interpret("boolean", "Yes").unwrap(), Value::Bool(true));
    assert_eq!(interpret("phone", "+1 (415) 555-0123").unwrap(), Value::from("+14155550123"));
    assert_eq!(interpret("email", "").unwrap(), Value::Null);
    assert!(interpret("email", "nope").is_err());
}

#[test]
fn spreadsheet_date_columns() {
    let date = SheetDate { kind: SheetDateKind::Date, base1904: false };
    let datetime = SheetDate { kind: SheetDateKind::DateTime, base1904: false };
    let time = SheetDate { kind: SheetDateKind::Time, base1904: false };
    let with = |sd: SheetDate, cells: &[&str]| {
        let mut s = stats(cells);
        s.sheet_date = Some(sd);
        decide(&s)
    };
    assert_eq!(with(date, &["45292", "45293", ""]), Decision { suggested: "date", review: vec![] });
    assert_eq!(with(datetime, &["45292.5", "45293"]), Decision { suggested: "datetime", review: vec![] });
    assert_eq!(with(time, &["0.5", "0.25"]), Decision { suggested: "text", review: vec![] });
    assert_eq!(with(date, &["45292", "2024-01-03"]).suggested, "date");
    assert_eq!(with(date, &["45292", "n/a"]), Decision { suggested: "text", review: vec!["text", "date"] });
    // Without the hint the same cells are integers.
    assert_eq!(decide(&stats(&["45292", "45293"])).suggested, "integer");

    assert_eq!(interpret_cell("date", "45292", Some(&date)).unwrap(), Value::from("2024-01-01"));
    assert_eq!(interpret_cell("datetime", "45292.5625", Some(&datetime)).unwrap(), Value::from("2024-01-01T13:30:00"));
    assert_eq!(interpret_cell("datetime", "45292", Some(&date)).unwrap(), Value::from("2024-01-01T00:00:00"));
    assert_eq!(interpret_cell("text", "0.5625", Some(&time)).unwrap(), Value::from("13:30:00"));
    assert_eq!(interpret_cell("date", "2024-01-03", Some(&date)).unwrap(), Value::from("2024-01-03"));
    assert_eq!(interpret_cell("date", "", Some(&date)).unwrap(), Value::Null);
    assert!(interpret_cell("date", "60", Some(&date)).is_err());
    // A person who types the column as integer keeps the serial.
    assert_eq!(interpret_cell("integer", "45292", Some(&date)).unwrap(), Value::from(45292));
    assert_eq!(interpret_cell("text", "45292", Some(&date)).unwrap(), Value::from("45292"));
    assert_eq!(interpret_cell("date", "45292", None).unwrap_err(), "`45292` is not a date (YYYY-MM-DD or D/M/YYYY)");
    // Stats written before the field existed still read.
    let old: ColumnStats = serde_json::from_str(r#"{"integer":2,"samples":["1"]}"#).unwrap();
    assert_eq!(old.sheet_date, None);
    let round: ColumnStats = serde_json::from_str(&serde_json::to_string(&ColumnStats { sheet_date: Some(time), ..Default::default() }).unwrap()).unwrap();
    assert_eq!(round.sheet_date, Some(time));
}

#[test]
fn keys() {
    assert_eq!(field_key("First Name", 0), "First_Name");
    assert_eq!(field_key("  ", 2), "column_3");
    assert_eq!(field_key("2024 total", 0), "c_2024_total");
    assert_eq!(field_key("e-mail!", 0), "e_mail");
    assert_eq!(field_key(&"x".repeat(100), 0).len(), 64);
}
