//! DCB over rtnetlink: the request `dcb`, `lldptool` and `mlnx_qos` send to read a netdev's
//! IEEE 802.1Qaz settings (PFC, ETS, the APP table), and the decoding of the kernel's answer.
//! Message and attribute layout from the kernel's `include/uapi/linux/dcbnl.h` (`struct dcbmsg`,
//! `enum dcbnl_attrs`, `enum ieee_attrs`, `struct ieee_pfc`, `struct ieee_ets`, `struct dcb_app`)
//! and `include/uapi/linux/netlink.h`; what the kernel sends is `dcbnl_ieee_fill` in
//! `net/dcb/dcbnl.c`. Pure: bytes in, bytes out; the socket is in `crate::live`.

/// `RTM_GETDCB`.
pub const RTM_GETDCB: u16 = 78;
/// `NLMSG_ERROR`.
const NLMSG_ERROR: u16 = 2;
const NLM_F_REQUEST: u16 = 1;
const AF_UNSPEC: u8 = 0;
/// `DCB_CMD_IEEE_GET`.
const DCB_CMD_IEEE_GET: u8 = 21;
/// `DCB_ATTR_IFNAME`, `DCB_ATTR_IEEE`, `DCB_ATTR_DCBX`.
const DCB_ATTR_IFNAME: u16 = 1;
const DCB_ATTR_IEEE: u16 = 13;
const DCB_ATTR_DCBX: u16 = 14;
/// `DCB_ATTR_IEEE_ETS`, `_PFC`, `_APP_TABLE`; `DCB_ATTR_IEEE_APP` inside the table.
const IEEE_ETS: u16 = 1;
const IEEE_PFC: u16 = 2;
const IEEE_APP_TABLE: u16 = 3;
const IEEE_APP: u16 = 1;
/// `NLA_F_NESTED | NLA_F_NET_BYTEORDER`: flag bits of an attribute type.
const NLA_TYPE_MASK: u16 = 0x3fff;
/// `IEEE_8021QAZ_APP_SEL_DSCP`.
pub const APP_SEL_DSCP: u8 = 5;
/// `IEEE_8021QAZ_MAX_TCS`.
const MAX_TCS: usize = 8;
/// sizeof(struct nlmsghdr), sizeof(struct dcbmsg), sizeof(struct nlattr).
const NLMSG_HDR: usize = 16;
const DCBMSG: usize = 4;
const NLA_HDR: usize = 4;
/// sizeof(struct ieee_pfc): pfc_cap, pfc_en, mbc, 1 pad byte, delay (u16), requests[8] and
/// indications[8] (u64 each).
const IEEE_PFC_LEN: usize = 4 + 2 + 2 + 8 * 8 * 2;
/// sizeof(struct ieee_ets): willing, ets_cap, cbs, tc_tx_bw[8], tc_rx_bw[8], tc_tsa[8],
/// prio_tc[8], tc_reco_bw[8], tc_reco_tsa[8], reco_prio_tc[8].
const IEEE_ETS_LEN: usize = 3 + 7 * MAX_TCS;

/// A netdev's IEEE DCB settings as the kernel reported them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IeeeDcb {
    /// `ieee_pfc.pfc_cap` and `pfc_en` (bit N: priority N), when the driver reports PFC.
    pub pfc: Option<(u8, u8)>,
    /// ETS: bandwidth share per traffic class and traffic class per priority.
    pub ets: Option<Ets>,
    /// The APP table: (selector, priority, protocol); DSCP entries are selector 5.
    pub app: Vec<(u8, u8, u16)>,
    /// `DCB_ATTR_DCBX`: the DCBX mode bits (`DCB_CAP_DCBX_HOST` 0x1 ...), when sent.
    pub dcbx: Option<u8>,
}

/// `struct ieee_ets`, the parts fabrik reports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ets {
    /// `tc_tx_bw`: percent of the link per traffic class.
    pub tc_tx_bw: [u8; 8],
    /// `tc_tsa`: the scheduler of each traffic class (0 strict, 2 ETS, 255 vendor).
    pub tc_tsa: [u8; 8],
    /// `prio_tc`: the traffic class of each priority.
    pub prio_tc: [u8; 8],
}

impl IeeeDcb {
    /// Priorities with PFC enabled, ascending.
    pub fn pfc_priorities(&self) -> Option<Vec<u8>> {
        let (_, en) = self.pfc?;
        Some((0..8).filter(|p| en & (1 << p) != 0).collect())
    }

    /// `dscp` when the APP table maps DSCP values (mlx5 switches its trust state to DSCP with
    /// the first DSCP entry and back to PCP when the last one goes: `mlx5e_dcbnl_ieee_setapp`
    /// and `_delapp` in `drivers/net/ethernet/mellanox/mlx5/core/en_dcbnl.c`), else `pcp`.
    pub fn trust(&self) -> &'static str {
        if self.app.iter().any(|(sel, _, _)| *sel == APP_SEL_DSCP) {
            "dscp"
        } else {
            "pcp"
        }
    }
}

/// Why a reply gave no settings.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DcbError {
    /// The kernel answered with an error (`-EOPNOTSUPP`: the driver has no DCB; `-ENODEV`).
    #[error("the kernel answered errno {0}")]
    Errno(i32),
    /// Bytes that are not a DCB reply.
    #[error("not a DCB reply: {0}")]
    Malformed(&'static str),
}

/// The errno the kernel gives a netdev whose driver has no `dcbnl_ops`.
pub const EOPNOTSUPP: i32 = 95;

fn align4(n: usize) -> usize {
    (n + 3) & !3
}

/// The `RTM_GETDCB` / `DCB_CMD_IEEE_GET` request for `ifname`, sequence `seq`.
pub fn ieee_get_request(ifname: &str, seq: u32) -> Vec<u8> {
    let mut name = ifname.as_bytes().to_vec();
    name.push(0);
    let attr_len = NLA_HDR + name.len();
    let total = NLMSG_HDR + DCBMSG + align4(attr_len);
    let mut b = Vec::with_capacity(total);
    b.extend_from_slice(&(total as u32).to_ne_bytes());
    b.extend_from_slice(&RTM_GETDCB.to_ne_bytes());
    b.extend_from_slice(&NLM_F_REQUEST.to_ne_bytes());
    b.extend_from_slice(&seq.to_ne_bytes());
    b.extend_from_slice(&0u32.to_ne_bytes());
    b.extend_from_slice(&[AF_UNSPEC, DCB_CMD_IEEE_GET, 0, 0]);
    b.extend_from_slice(&(attr_len as u16).to_ne_bytes());
    b.extend_from_slice(&DCB_ATTR_IFNAME.to_ne_bytes());
    b.extend_from_slice(&name);
    b.resize(total, 0);
    b
}

fn u16_ne(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

fn u32_ne(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// The attributes of `b`: (type without flags, payload). Stops at the first one that does not
/// fit, as the kernel's `nla_ok` does.
fn attributes(b: &[u8]) -> Vec<(u16, &[u8])> {
    let mut out = vec![];
    let mut pos = 0;
    while let (Some(len), Some(ty)) = (u16_ne(b, pos), u16_ne(b, pos + 2)) {
        let len = usize::from(len);
        if len < NLA_HDR || pos + len > b.len() {
            break;
        }
        out.push((ty & NLA_TYPE_MASK, &b[pos + NLA_HDR..pos + len]));
        pos += align4(len);
    }
    out
}

/// Decodes the kernel's answer to [`ieee_get_request`] (one netlink message).
pub fn parse_ieee_reply(b: &[u8]) -> Result<IeeeDcb, DcbError> {
    let len = u32_ne(b, 0).ok_or(DcbError::Malformed("shorter than a netlink header"))? as usize;
    let ty = u16_ne(b, 4).ok_or(DcbError::Malformed("shorter than a netlink header"))?;
    if len < NLMSG_HDR || len > b.len() {
        return Err(DcbError::Malformed("length outside the message"));
    }
    let body = &b[NLMSG_HDR..len];
    if ty == NLMSG_ERROR {
        let errno = u32_ne(body, 0).ok_or(DcbError::Malformed("short error message"))? as i32;
        return Err(DcbError::Errno(-errno));
    }
    if ty != RTM_GETDCB {
        return Err(DcbError::Malformed("not an RTM_GETDCB message"));
    }
    let attrs = body.get(DCBMSG..).ok_or(DcbError::Malformed("no dcbmsg"))?;
    let mut out = IeeeDcb::default();
    for (ty, payload) in attributes(attrs) {
        match ty {
            DCB_ATTR_DCBX => out.dcbx = payload.first().copied(),
            DCB_ATTR_IEEE => {
                for (ity, p) in attributes(payload) {
                    match ity {
                        IEEE_PFC if p.len() >= IEEE_PFC_LEN => out.pfc = Some((p[0], p[1])),
                        IEEE_ETS if p.len() >= IEEE_ETS_LEN => {
                            let arr = |at: usize| -> [u8; 8] {
                                let mut a = [0u8; 8];
                                a.copy_from_slice(&p[at..at + MAX_TCS]);
                                a
                            };
                            out.ets = Some(Ets {
                                tc_tx_bw: arr(3),
                                tc_tsa: arr(3 + 2 * MAX_TCS),
                                prio_tc: arr(3 + 3 * MAX_TCS),
                            });
                        }
                        IEEE_APP_TABLE => {
                            for (aty, app) in attributes(p) {
                                if aty == IEEE_APP && app.len() >= 4 {
                                    let proto = u16_ne(app, 2).unwrap_or(0);
                                    out.app.push((app[0], app[1], proto));
                                }
                            }
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    Ok(out)
}

/// The settings as `fabrik snapshot` keeps them (`fabrik/dcb/IFNAME.txt`), one `key: value`
/// line each, so a snapshot reads back the facts the live kernel gave.
pub fn format_dcb_record(d: &IeeeDcb) -> String {
    let list = |v: &[u8]| v.iter().map(u8::to_string).collect::<Vec<_>>().join(",");
    let mut s = String::new();
    if let Some((cap, en)) = d.pfc {
        s.push_str(&format!("pfc_cap: {cap}\npfc_en: {en}\n"));
    }
    if let Some(e) = &d.ets {
        s.push_str(&format!(
            "tc_tx_bw: {}\ntc_tsa: {}\nprio_tc: {}\n",
            list(&e.tc_tx_bw),
            list(&e.tc_tsa),
            list(&e.prio_tc)
        ));
    }
    for (sel, prio, proto) in &d.app {
        s.push_str(&format!("app: {sel} {prio} {proto}\n"));
    }
    if let Some(x) = d.dcbx {
        s.push_str(&format!("dcbx: {x}\n"));
    }
    s
}

/// Reads [`format_dcb_record`]'s text back; lines it does not know are left out.
pub fn parse_dcb_record(text: &str) -> IeeeDcb {
    let mut d = IeeeDcb::default();
    let (mut cap, mut en) = (None, None);
    let mut ets = Ets::default();
    let mut have_ets = false;
    let arr = |v: &str| -> Option<[u8; 8]> {
        let n: Vec<u8> = v
            .split(',')
            .map(|x| x.trim().parse().ok())
            .collect::<Option<_>>()?;
        n.try_into().ok()
    };
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let v = v.trim();
        match k.trim() {
            "pfc_cap" => cap = v.parse().ok(),
            "pfc_en" => en = v.parse().ok(),
            "dcbx" => d.dcbx = v.parse().ok(),
            "tc_tx_bw" => {
                if let Some(a) = arr(v) {
                    ets.tc_tx_bw = a;
                    have_ets = true;
                }
            }
            "tc_tsa" => {
                if let Some(a) = arr(v) {
                    ets.tc_tsa = a;
                }
            }
            "prio_tc" => {
                if let Some(a) = arr(v) {
                    ets.prio_tc = a;
                }
            }
            "app" => {
                let w: Vec<&str> = v.split_whitespace().collect();
                if let [s, p, pr] = w[..] {
                    if let (Ok(s), Ok(p), Ok(pr)) = (s.parse(), p.parse(), pr.parse()) {
                        d.app.push((s, p, pr));
                    }
                }
            }
            _ => {}
        }
    }
    if let (Some(c), Some(e)) = (cap, en) {
        d.pfc = Some((c, e));
    }
    if have_ets {
        d.ets = Some(ets);
    }
    d
}

/// Encodes a reply as the kernel's `dcbnl_ieee_fill` lays it out, for tests of the decoder:
/// the kernel is the only other writer of these bytes, and no driver on a test machine has
/// DCB (veth, virtio and rxe answer `EOPNOTSUPP`).
#[cfg(test)]
pub(crate) fn encode_reply(ifname: &str, d: &IeeeDcb, seq: u32) -> Vec<u8> {
    fn attr(ty: u16, payload: &[u8]) -> Vec<u8> {
        let mut a = Vec::new();
        a.extend_from_slice(&((NLA_HDR + payload.len()) as u16).to_ne_bytes());
        a.extend_from_slice(&ty.to_ne_bytes());
        a.extend_from_slice(payload);
        a.resize(align4(a.len()), 0);
        a
    }
    let mut name = ifname.as_bytes().to_vec();
    name.push(0);
    let mut ieee = Vec::new();
    if let Some(e) = &d.ets {
        let mut p = vec![0u8; IEEE_ETS_LEN];
        p[3..11].copy_from_slice(&e.tc_tx_bw);
        p[3 + 2 * MAX_TCS..3 + 3 * MAX_TCS].copy_from_slice(&e.tc_tsa);
        p[3 + 3 * MAX_TCS..3 + 4 * MAX_TCS].copy_from_slice(&e.prio_tc);
        ieee.extend(attr(IEEE_ETS, &p));
    }
    if let Some((cap, en)) = d.pfc {
        let mut p = vec![0u8; IEEE_PFC_LEN];
        p[0] = cap;
        p[1] = en;
        ieee.extend(attr(IEEE_PFC, &p));
    }
    let mut table = Vec::new();
    for (s, p, proto) in &d.app {
        let mut a = vec![*s, *p];
        a.extend_from_slice(&proto.to_ne_bytes());
        table.extend(attr(IEEE_APP, &a));
    }
    ieee.extend(attr(IEEE_APP_TABLE | 0x8000, &table));
    let mut attrs = attr(DCB_ATTR_IFNAME, &name);
    attrs.extend(attr(DCB_ATTR_IEEE | 0x8000, &ieee));
    if let Some(x) = d.dcbx {
        attrs.extend(attr(DCB_ATTR_DCBX, &[x]));
    }
    let total = NLMSG_HDR + DCBMSG + attrs.len();
    let mut b = Vec::new();
    b.extend_from_slice(&(total as u32).to_ne_bytes());
    b.extend_from_slice(&RTM_GETDCB.to_ne_bytes());
    b.extend_from_slice(&0u16.to_ne_bytes());
    b.extend_from_slice(&seq.to_ne_bytes());
    b.extend_from_slice(&0u32.to_ne_bytes());
    b.extend_from_slice(&[AF_UNSPEC, DCB_CMD_IEEE_GET, 0, 0]);
    b.extend(attrs);
    b
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn mlx5_dscp() -> IeeeDcb {
        // What mlx5 answers with `mlnx_qos -i X --pfc 0,0,0,1,0,0,0,0 --trust dscp`: PFC on
        // priority 3 (pfc_cap 8: mlx5 reports IEEE_8021QAZ_MAX_TCS), ETS with vendor TSA, and
        // the 64 DSCP-to-priority entries (dscp >> 3) of the default DSCP map.
        IeeeDcb {
            pfc: Some((8, 0b0000_1000)),
            ets: Some(Ets {
                tc_tx_bw: [0; 8],
                tc_tsa: [255; 8],
                prio_tc: [1, 0, 2, 3, 4, 5, 6, 7],
            }),
            app: (0..64u16)
                .map(|d| (APP_SEL_DSCP, (d >> 3) as u8, d))
                .collect(),
            dcbx: Some(0x4 | 0x8),
        }
    }

    #[test]
    fn the_request_is_what_the_kernel_parses() {
        let r = ieee_get_request("ens1f0np0", 7);
        assert_eq!(
            u32::from_ne_bytes(r[0..4].try_into().unwrap()) as usize,
            r.len()
        );
        assert_eq!(u16::from_ne_bytes([r[4], r[5]]), RTM_GETDCB);
        assert_eq!(r[16..18], [AF_UNSPEC, DCB_CMD_IEEE_GET]);
        assert_eq!(r.len() % 4, 0);
        let attrs = attributes(&r[NLMSG_HDR + DCBMSG..]);
        assert_eq!(attrs, vec![(DCB_ATTR_IFNAME, &b"ens1f0np0\0"[..])]);
    }

    #[test]
    fn a_reply_gives_pfc_trust_and_ets() {
        let d = mlx5_dscp();
        let got = parse_ieee_reply(&encode_reply("eth2", &d, 1)).unwrap();
        assert_eq!(got, d);
        assert_eq!(got.pfc_priorities(), Some(vec![3]));
        assert_eq!(got.trust(), "dscp");
        let pcp = IeeeDcb {
            app: vec![],
            ..d.clone()
        };
        assert_eq!(
            parse_ieee_reply(&encode_reply("eth2", &pcp, 1))
                .unwrap()
                .trust(),
            "pcp"
        );
        // The record a snapshot keeps reads back the same.
        assert_eq!(parse_dcb_record(&format_dcb_record(&d)), d);
    }

    #[test]
    fn an_error_reply_names_the_errno() {
        // NLMSG_ERROR: header, then the negative errno and the request's header.
        let req = ieee_get_request("veth0", 1);
        let mut b = Vec::new();
        b.extend_from_slice(&((NLMSG_HDR + 4 + NLMSG_HDR) as u32).to_ne_bytes());
        b.extend_from_slice(&NLMSG_ERROR.to_ne_bytes());
        b.extend_from_slice(&0u16.to_ne_bytes());
        b.extend_from_slice(&1u32.to_ne_bytes());
        b.extend_from_slice(&0u32.to_ne_bytes());
        b.extend_from_slice(&(-EOPNOTSUPP).to_ne_bytes());
        b.extend_from_slice(&req[..NLMSG_HDR]);
        assert_eq!(parse_ieee_reply(&b), Err(DcbError::Errno(EOPNOTSUPP)));
        assert!(parse_ieee_reply(&b[..10]).is_err());
    }

    proptest! {
        #[test]
        fn replies_round_trip(
            pfc in proptest::option::of((any::<u8>(), any::<u8>())),
            bw in proptest::array::uniform8(0u8..=100),
            prio_tc in proptest::array::uniform8(0u8..8),
            app in proptest::collection::vec((1u8..=5, 0u8..8, any::<u16>()), 0..80),
            name in "[a-z][a-z0-9]{0,14}",
        ) {
            let d = IeeeDcb {
                pfc,
                ets: Some(Ets { tc_tx_bw: bw, tc_tsa: [2; 8], prio_tc }),
                app,
                dcbx: Some(4),
            };
            prop_assert_eq!(parse_ieee_reply(&encode_reply(&name, &d, 1)).unwrap(), d.clone());
            prop_assert_eq!(parse_dcb_record(&format_dcb_record(&d)), d);
        }

        #[test]
        fn any_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..600)) {
            let _ = parse_ieee_reply(&b);
            let _ = parse_dcb_record(&String::from_utf8_lossy(&b));
        }

        #[test]
        fn a_cut_reply_never_panics(cut in 0usize..400) {
            let full = encode_reply("eth0", &mlx5_dscp(), 1);
            let _ = parse_ieee_reply(&full[..cut.min(full.len())]);
        }
    }
}
