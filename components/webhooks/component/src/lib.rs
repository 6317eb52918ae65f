//! The webhooks component: the area library's requests, exported.
switchboard_guest::area_component!(switchboard_webhooks_area::handle);
