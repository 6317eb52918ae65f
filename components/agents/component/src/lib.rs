//! The agents component: the area library's requests, exported.
switchboard_guest::area_component!(switchboard_agents_area::handle);
