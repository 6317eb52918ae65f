//! The request record a component is called with, built from an admitted
//! request in one place for the host and the edge.

/// The component's view of an admitted request, as the WIT `request`
/// record of the caller's bindings (the host's wasmtime bindings and the
/// edge's guest bindings are two Rust types of one record, so one literal
/// serves both): `component_request!(wit::Request, &mut admitted, request_id)`.
/// The body moves into it.
#[macro_export]
macro_rules! component_request {
    ($request:path, $admitted:expr, $request_id:expr) => {{
        let a: &mut $crate::Admitted = $admitted;
        $request {
            operation: a.op.id.as_str().to_string(),
            business_id: a.business_id.clone().unwrap_or_default(),
            path_params: a.path_params.clone(),
            query: a.query.clone(),
            body: a.body.take(),
            caller: a.caller.clone(),
            request_id: $request_id.to_string(),
            stream_cursor: None,
            prepared: None,
        }
    }};
}
