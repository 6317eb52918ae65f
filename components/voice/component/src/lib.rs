//! The voice component: the area library's requests, exported.
switchboard_guest::area_component!(switchboard_voice_area::handle);
