//! The contacts component: the area library's requests, exported.
switchboard_guest::area_component!(switchboard_contacts_area::handle, switchboard_contacts_area::prepare);
