//! The campaigns component: the area library's requests, exported.
switchboard_guest::area_component!(switchboard_campaigns_area::handle);
