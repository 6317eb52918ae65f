//! The data-sources component: the area library's requests, exported.
switchboard_guest::area_component!(switchboard_data_sources_area::handle, switchboard_data_sources_area::prepare);
