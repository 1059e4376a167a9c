use super::*;

#[test]
fn state_values_parse_as_sysfs_writes_them() {
    let s = StateValue::parse("4: ACTIVE\n");
    assert_eq!(s.code, Some(4));
    assert_eq!(s.port_state(), PortState::Active);
    let p = StateValue::parse("2: Polling");
    assert_eq!(p.phys_state(), PhysState::Polling);
    let odd = StateValue::parse("9: SOMETHING_NEW");
    assert_eq!(odd.port_state(), PortState::Unknown);
    assert_eq!(odd.name, "SOMETHING_NEW");
    let bare = StateValue::parse("garbage");
    assert_eq!(bare.code, None);
    assert_eq!(bare.port_state(), PortState::Unknown);
}

#[test]
fn gid_types_and_link_layers_keep_unknown_values() {
    assert_eq!(GidType::parse("RoCE v2\n"), GidType::RoceV2);
    assert_eq!(GidType::parse("IB/RoCE v1"), GidType::IbRoceV1);
    assert_eq!(GidType::parse("RoCE v3"), GidType::Other("RoCE v3".into()));
    assert_eq!(LinkLayer::parse("InfiniBand"), LinkLayer::Infiniband);
    assert_eq!(LinkLayer::parse("OPA"), LinkLayer::Other("OPA".into()));
}
