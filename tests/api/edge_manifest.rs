//! spin.toml checked against Spin's manifest reference, version 2 (Spin
//! cannot be installed here): the keys Spin accepts at each level (it
//! refuses unknown ones), the shape of variables, triggers and components,
//! templates that name declared variables, and what the edge build needs
//! of it (the API routed to the edge component, outbound hosts limited to
//! the primary's URL variable, the token a secret variable, a build
//! command that produces the component's source).

use toml::Value;

const TOP: &[&str] = &["spin_manifest_version", "application", "variables", "trigger", "component"];
const APPLICATION: &[&str] = &["name", "version", "description", "authors", "trigger"];
const VARIABLE: &[&str] = &["default", "required", "secret"];
const HTTP_TRIGGER: &[&str] = &["route", "component", "executor", "id"];
const COMPONENT: &[&str] = &[
    "description",
    "source",
    "files",
    "exclude_files",
    "allowed_outbound_hosts",
    "allowed_http_hosts",
    "key_value_stores",
    "sqlite_databases",
    "ai_models",
    "environment",
    "build",
    "variables",
    "dependencies_inherit_configuration",
    "dependencies",
    "tool",
];
const BUILD: &[&str] = &["command", "workdir", "watch"];

fn keys_in(what: &str, table: &toml::Table, allowed: &[&str]) -> Result<(), String> {
    match table.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(format!("{what}: `{k}` is not a key Spin's manifest v2 knows")),
        None => Ok(()),
    }
}

/// Spin's ids: lowercase words of letters and digits joined by `-` (components) or `_` (variables).
fn is_id(s: &str, sep: char) -> bool {
    !s.is_empty() && s.split(sep).all(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())) && s.starts_with(|c: char| c.is_ascii_lowercase())
}

/// The variable names `{{ name }}` templates in `s` use.
fn templates(s: &str) -> Vec<String> {
    s.split("{{").skip(1).filter_map(|rest| rest.split_once("}}").map(|(name, _)| name.trim().to_string())).collect()
}

pub fn check(m: &Value) -> Result<(), String> {
    let top = m.as_table().ok_or("not a table")?;
    keys_in("top level", top, TOP)?;
    if m.get("spin_manifest_version").and_then(Value::as_integer) != Some(2) {
        return Err("spin_manifest_version must be the integer 2".into());
    }
    let app = m.get("application").and_then(Value::as_table).ok_or("[application] is required")?;
    keys_in("[application]", app, APPLICATION)?;
    app.get("name").and_then(Value::as_str).filter(|n| !n.is_empty()).ok_or("application.name is required")?;

    let variables = m.get("variables").and_then(Value::as_table).cloned().unwrap_or_default();
    for (name, v) in &variables {
        if !is_id(name, '_') {
            return Err(format!("variable `{name}`: lowercase letters, digits and underscores"));
        }
        let v = v.as_table().ok_or(format!("variable `{name}` must be a table"))?;
        keys_in(&format!("variable `{name}`"), v, VARIABLE)?;
        let required = v.get("required").map(|r| r.as_bool().ok_or(format!("variable `{name}`: required is a boolean"))).transpose()?.unwrap_or(false);
        let default = v.get("default").map(|d| d.as_str().ok_or(format!("variable `{name}`: default is a string"))).transpose()?;
        if required == default.is_some() {
            return Err(format!("variable `{name}`: either required = true or a default, not both and not neither"));
        }
        v.get("secret").map(|s| s.as_bool().ok_or(format!("variable `{name}`: secret is a boolean"))).transpose()?;
    }
    let known = |s: &str, at: &str| -> Result<(), String> {
        match templates(s).into_iter().find(|t| !variables.contains_key(t)) {
            Some(t) => Err(format!("{at}: template names `{t}`, which [variables] does not declare")),
            None => Ok(()),
        }
    };

    let components = m.get("component").and_then(Value::as_table).ok_or("at least one [component.<id>]")?;
    for (id, c) in components {
        if !is_id(id, '-') {
            return Err(format!("component id `{id}`: lowercase letters, digits and hyphens"));
        }
        let c = c.as_table().ok_or(format!("component `{id}` must be a table"))?;
        keys_in(&format!("[component.{id}]"), c, COMPONENT)?;
        match c.get("source") {
            Some(Value::String(s)) if s.ends_with(".wasm") => {}
            Some(Value::Table(t)) if t.contains_key("url") && t.contains_key("digest") => {}
            _ => return Err(format!("component `{id}`: source is a .wasm path or {{ url, digest }}")),
        }
        for host in c.get("allowed_outbound_hosts").and_then(Value::as_array).cloned().unwrap_or_default() {
            let host = host.as_str().ok_or(format!("component `{id}`: allowed_outbound_hosts holds strings"))?;
            known(host, &format!("component `{id}` allowed_outbound_hosts"))?;
            if templates(host).is_empty() && !host.contains("://") {
                return Err(format!("component `{id}`: outbound host `{host}` needs a scheme"));
            }
        }
        for (k, v) in c.get("environment").and_then(Value::as_table).cloned().unwrap_or_default() {
            let v = v.as_str().ok_or(format!("component `{id}`: environment {k} is a string"))?;
            known(v, &format!("component `{id}` environment {k}"))?;
        }
        if let Some(b) = c.get("build") {
            let b = b.as_table().ok_or(format!("component `{id}`: build is a table"))?;
            keys_in(&format!("[component.{id}.build]"), b, BUILD)?;
            b.get("command").and_then(Value::as_str).ok_or(format!("component `{id}`: build.command is required"))?;
        }
    }

    let http = m.get("trigger").and_then(|t| t.get("http")).and_then(Value::as_array).ok_or("at least one [[trigger.http]]")?;
    for t in http {
        let t = t.as_table().ok_or("a [[trigger.http]] is a table")?;
        keys_in("[[trigger.http]]", t, HTTP_TRIGGER)?;
        match t.get("route") {
            Some(Value::String(r)) if r.starts_with('/') => {}
            Some(Value::Table(r)) if r.get("private").and_then(Value::as_bool) == Some(true) => {}
            _ => return Err("trigger route: a path starting with / (or { private = true })".into()),
        }
        let component = t.get("component").and_then(Value::as_str).ok_or("trigger component: a component id")?;
        if !components.contains_key(component) {
            return Err(format!("trigger names component `{component}`, which is not declared"));
        }
    }

    // What the edge build needs of it.
    let api = http.iter().find(|t| t.get("route").and_then(Value::as_str) == Some("/api/v1/...")).ok_or("no trigger routes /api/v1/...")?;
    let id = api.get("component").and_then(Value::as_str).unwrap();
    let c = &components[id];
    let hosts = c.get("allowed_outbound_hosts").and_then(Value::as_array).cloned().unwrap_or_default();
    let hosts: Vec<&str> = hosts.iter().filter_map(Value::as_str).collect();
    if hosts != ["{{ primary_url }}", "{{ write_node }}"] {
        return Err(format!("the API component may reach only the primary and its write node: allowed_outbound_hosts = [\"{{{{ primary_url }}}}\", \"{{{{ write_node }}}}\"], found {hosts:?}"));
    }
    let token = variables.get("primary_auth_token").ok_or("a primary_auth_token variable")?;
    if token.get("secret").and_then(Value::as_bool) != Some(true) {
        return Err("primary_auth_token must be secret = true".into());
    }
    let env = c.get("environment").and_then(Value::as_table).ok_or("the API component's environment")?;
    if env.get("SWITCHBOARD_PRIMARY_URL").and_then(Value::as_str) != Some("{{ primary_url }}") || env.get("SWITCHBOARD_PRIMARY_AUTH_TOKEN").and_then(Value::as_str) != Some("{{ primary_auth_token }}")
    {
        return Err("the component's environment must carry the primary's URL and token from the variables".into());
    }
    let source = c.get("source").and_then(Value::as_str).unwrap_or("");
    let build = c.get("build").and_then(|b| b.get("command")).and_then(Value::as_str).unwrap_or("");
    if build != "./dev edge" || source != "target/edge/switchboard-edge.wasm" {
        return Err("the API component is built by `./dev edge` into target/edge/switchboard-edge.wasm".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check;

    fn parsed(s: &str) -> toml::Value {
        toml::Value::Table(toml::from_str(s).unwrap())
    }

    const GOOD: &str = r#"
spin_manifest_version = 2
[application]
name = "x"
[variables]
primary_url = { required = true }
primary_auth_token = { default = "", secret = true }
write_node = { required = true }
[[trigger.http]]
route = "/api/v1/..."
component = "api"
[component.api]
source = "target/edge/switchboard-edge.wasm"
allowed_outbound_hosts = ["{{ primary_url }}", "{{ write_node }}"]
environment = { SWITCHBOARD_PRIMARY_URL = "{{ primary_url }}", SWITCHBOARD_PRIMARY_AUTH_TOKEN = "{{ primary_auth_token }}", SWITCHBOARD_WRITE_NODE = "{{ write_node }}" }
[component.api.build]
command = "./dev edge"
"#;

    #[test]
    fn the_checker_refuses_each_kind_of_fault() {
        check(&parsed(GOOD)).unwrap();
        for (from, to) in [
            ("spin_manifest_version = 2", "spin_manifest_version = \"2\""),
            ("name = \"x\"", "nom = \"x\""),
            ("primary_url = { required = true }", "primary_url = { required = true, default = \"a\" }"),
            ("component = \"api\"", "component = \"apx\""),
            ("[component.api]\n", "[component.api]\ncolour = \"red\"\n"),
            ("allowed_outbound_hosts = [\"{{ primary_url }}\", \"{{ write_node }}\"]", "allowed_outbound_hosts = [\"*://*:*\"]"),
            ("{ default = \"\", secret = true }", "{ default = \"\" }"),
            ("SWITCHBOARD_PRIMARY_URL = \"{{ primary_url }}\"", "SWITCHBOARD_PRIMARY_URL = \"{{ primary_uri }}\""),
            ("route = \"/api/v1/...\"", "route = \"api/v1/...\""),
        ] {
            assert!(GOOD.contains(from), "{from}");
            assert!(check(&parsed(&GOOD.replace(from, to))).is_err(), "{to} should be refused");
        }
    }
}
