use super::*;

/// The id, parsed as its area's own `Operation` and back.
fn in_its_area(id: OperationId) -> Option<OperationId> {
    let name = id.as_str();
    match id.component() {
        Component::Gateway => name.parse::<gateway::Operation>().ok().map(OperationId::from),
        Component::Webhooks => name.parse::<webhooks::Operation>().ok().map(OperationId::from),
        Component::Messaging => name.parse::<messaging::Operation>().ok().map(OperationId::from),
        Component::Agents => name.parse::<agents::Operation>().ok().map(OperationId::from),
        Component::DataSources => name.parse::<data_sources::Operation>().ok().map(OperationId::from),
        Component::Contacts => name.parse::<contacts::Operation>().ok().map(OperationId::from),
        Component::Voice => name.parse::<voice::Operation>().ok().map(OperationId::from),
        Component::Campaigns => name.parse::<campaigns::Operation>().ok().map(OperationId::from),
    }
}

/// The id, parsed as its area's `Prepared`.
fn prepared_in_its_area(id: OperationId) -> bool {
    let name = id.as_str();
    match id.component() {
        Component::Gateway => name.parse::<gateway::Prepared>().is_ok(),
        Component::Webhooks => name.parse::<webhooks::Prepared>().is_ok(),
        Component::Messaging => name.parse::<messaging::Prepared>().is_ok(),
        Component::Agents => name.parse::<agents::Prepared>().is_ok(),
        Component::DataSources => name.parse::<data_sources::Prepared>().is_ok(),
        Component::Contacts => name.parse::<contacts::Prepared>().is_ok(),
        Component::Voice => name.parse::<voice::Prepared>().is_ok(),
        Component::Campaigns => name.parse::<campaigns::Prepared>().is_ok(),
    }
}

#[test]
fn every_id_is_one_operation_of_its_area() {
    for &id in OperationId::ALL {
        assert_eq!(id.as_str().parse::<OperationId>(), Ok(id));
        assert_eq!(in_its_area(id), Some(id), "{id} is an operation of {}", id.component());
        assert_eq!(prepared_in_its_area(id), id.prepared_before_write(), "{id}");
    }
    let mut names: Vec<_> = OperationId::ALL.iter().map(|o| o.as_str()).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), OperationId::ALL.len(), "names are unique");
    let by_area: usize = Component::ALL.iter().map(|c| OperationId::ALL.iter().filter(|o| o.component() == *c).count()).sum();
    assert_eq!(by_area, OperationId::ALL.len());
}

#[test]
fn a_name_of_another_area_is_refused() {
    assert_eq!("listCalls".parse::<contacts::Operation>(), Err(UnknownOperation("listCalls".into())));
    assert!("listContacts".parse::<contacts::Prepared>().is_err(), "a read has no prepare step");
    assert_eq!("importContacts".parse::<contacts::Prepared>().map(|p| p.operation()), Ok(contacts::Operation::ImportContacts));
    assert!("ListContacts".parse::<OperationId>().is_err(), "names are exact");
    assert_eq!(OperationId::parse("getAutomationContract"), Some(OperationId::GetAutomationContract));
    assert_eq!(OperationId::GetAutomationContract.component(), Component::Gateway);
}
