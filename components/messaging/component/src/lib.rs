//! The messaging component: the area library's requests, exported.
switchboard_guest::area_component!(switchboard_messaging_area::handle);
