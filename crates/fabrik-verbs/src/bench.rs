//! RDMA point-to-point benchmarks over RC queue pairs: bandwidth (many WRs in flight, a
//! completion every `cq_mod`) and latency (ping-pong), for write, read and send, measured as
//! perftest's ib_*_bw / ib_*_lat measure them. The client drives; the server follows its lead over
//! the control channel. This file holds that conversation; the device choice, the resources, the
//! waits and the two kinds of loop live in the modules below.

mod bw;
mod lat;
mod port;
mod resources;
mod wait;

pub(crate) use port::{open_port, PortChoice};
pub use port::{usable_device, LocalOptions};

use std::sync::Arc;
use std::time::Duration;

use fabrik_model::{P2pReport, P2pRows, P2pTest, ResultSource, SCHEMA_VERSION};
use fabrik_wire::Channel;

use crate::error::VerbsError;
use crate::gpuref;
use crate::loader::Verbs;
use crate::mem::{pattern, MemKind};
use crate::proto::{Ctrl, Endpoint, Op, TestParams, PROTOCOL_VERSION};
use crate::stats::lat_row;
use crate::watch::PeerWatch;
use bw::{bw_receiver, bw_sender};
use lat::lat_loop;
use resources::{access_names, Resources};

fn expect_ctrl(ch: &mut Channel) -> Result<Ctrl, VerbsError> {
    let m: Ctrl = ch.recv().map_err(|e| VerbsError::Control(e.to_string()))?;
    if let Ctrl::Error { message } = &m {
        return Err(VerbsError::Control(format!("the peer failed: {message}")));
    }
    Ok(m)
}

fn send_ctrl(ch: &mut Channel, m: &Ctrl) -> Result<(), VerbsError> {
    ch.send(m).map_err(|e| VerbsError::Control(e.to_string()))
}

/// What to return when a data phase failed: the peer's own report when it interrupted with one,
/// else `e`, told to the peer (which may still be there to hear it).
fn report_failure(ch: &mut Channel, e: VerbsError) -> VerbsError {
    if matches!(e, VerbsError::PeerSpoke) {
        return match expect_ctrl(ch) {
            Err(peer) => peer,
            Ok(m) => unexpected(&m, "nothing during the data phase"),
        };
    }
    if !matches!(e, VerbsError::PeerGone { .. }) {
        let _ = ch.send(&Ctrl::Error {
            message: e.to_string(),
        });
    }
    e
}

fn unexpected(m: &Ctrl, want: &str) -> VerbsError {
    VerbsError::Control(format!("expected `{want}`, got {m:?}"))
}

/// Fills the source region with the pattern of `bytes` and clears the destination message.
fn prepare_buffers(res: &Resources, bytes: u64) -> Result<(), VerbsError> {
    let (buf, _) = res.local();
    buf.write(0, &pattern(bytes))?;
    buf.write(res.max_size as usize, &vec![0u8; bytes as usize])
}

/// Mismatching bytes of the message in the dst region; for write latency the last byte is the
/// ping-pong marker, so it is left out.
fn check_dst(res: &Resources, p: &TestParams, bytes: u64) -> Result<u64, VerbsError> {
    let len = if p.op == Op::Write && p.test == P2pTest::Lat {
        bytes - 1
    } else {
        bytes
    };
    res.local()
        .0
        .mismatches(res.max_size as usize, &pattern(bytes)[..len as usize])
}

fn validate_for_memory(p: &TestParams, mem: MemKind) -> Result<(), VerbsError> {
    if mem != MemKind::Host && p.op == Op::Write && p.test == P2pTest::Lat {
        return Err(VerbsError::Unsupported(
            "write latency polls the buffer from the CPU, so it needs --mem host; use --op send \
             for GPU-memory latency"
                .into(),
        ));
    }
    Ok(())
}

/// What one pass over the sizes measured.
#[derive(Default)]
struct Pass {
    bw_rows: Vec<fabrik_model::BwRow>,
    lat_rows: Vec<fabrik_model::LatRow>,
    verified: usize,
    tick_rate: Option<f64>,
}

/// Runs every size once, driving the server through Start/Ready/Done/Verified.
fn run_sizes(
    res: &mut Resources,
    ch: &mut Channel,
    params: &TestParams,
    remote: &Endpoint,
    timeout: Duration,
) -> Result<Pass, VerbsError> {
    let mut pass = Pass::default();
    for &bytes in &params.sizes {
        prepare_buffers(res, bytes)?;
        if params.op == Op::Send {
            res.post_receives()?;
        }
        send_ctrl(ch, &Ctrl::Start { bytes })?;
        match expect_ctrl(ch)? {
            Ctrl::Ready => {}
            m => return Err(unexpected(&m, "ready")),
        }
        let result = match params.test {
            P2pTest::Bw => {
                bw_sender(res, params, remote, bytes, timeout).map(|r| pass.bw_rows.push(r))
            }
            P2pTest::Lat => {
                lat_loop(res, params, remote, bytes, true, timeout).and_then(|(s, rate)| {
                    pass.lat_rows
                        .push(lat_row(bytes, params.iterations, &s).ok_or_else(|| {
                            VerbsError::Control(
                                "no samples: latency needs 2 or more iterations".into(),
                            )
                        })?);
                    pass.tick_rate = rate.or(pass.tick_rate);
                    Ok(())
                })
            }
        };
        if let Err(e) = result {
            return Err(report_failure(ch, e));
        }
        send_ctrl(ch, &Ctrl::Done { bytes })?;
        let remote_bad = match expect_ctrl(ch)? {
            Ctrl::Verified {
                mismatches,
                checked,
                ..
            } => {
                if checked {
                    pass.verified += 1;
                }
                mismatches
            }
            m => return Err(unexpected(&m, "verified")),
        };
        let mut local_bad = 0;
        let client_checks =
            params.op == Op::Read || (params.test == P2pTest::Lat && params.op != Op::Read);
        if params.verify && client_checks {
            local_bad = check_dst(res, params, bytes)?;
            pass.verified += 1;
        }
        if remote_bad + local_bad > 0 {
            let _ = ch.send(&Ctrl::Bye);
            return Err(VerbsError::Control(format!(
                "payload check failed at {bytes} bytes: {local_bad} bytes differ here, \
                 {remote_bad} at the peer{}",
                if res.use_host_ref {
                    " (host-memory reference pass)"
                } else {
                    ""
                }
            )));
        }
    }
    Ok(pass)
}

/// Runs the test as the client over an authenticated channel and returns the report.
pub fn run_client(
    verbs: &Arc<Verbs>,
    ch: &mut Channel,
    opts: &LocalOptions,
    params: &TestParams,
) -> Result<P2pReport, VerbsError> {
    params.validate().map_err(VerbsError::Unsupported)?;
    validate_for_memory(params, opts.mem)?;
    let mut res = Resources::new(verbs, opts, params)?;
    // GPU memory is compared with host memory on this same link: a host buffer of the same
    // size, registered the same way, used by the same QPs against the same peer buffer.
    let want_ref = opts.mem != MemKind::Host && opts.host_reference && params.test == P2pTest::Bw;
    if want_ref {
        res.add_host_reference()?;
    }
    send_ctrl(
        ch,
        &Ctrl::Hello {
            version: PROTOCOL_VERSION,
            params: params.clone(),
            endpoint: res.endpoint(),
        },
    )?;
    let remote = match expect_ctrl(ch)? {
        Ctrl::Welcome { endpoint } => endpoint,
        m => return Err(unexpected(&m, "welcome")),
    };
    res.connect(&remote)?;
    res.watch = PeerWatch::new(ch.stream());
    if params.op == Op::Send {
        res.post_receives()?;
    }
    let main = run_sizes(&mut res, ch, params, &remote, opts.timeout)?;
    let host_ref = if want_ref {
        res.use_host_ref = true;
        let r = run_sizes(&mut res, ch, params, &remote, opts.timeout)?;
        res.use_host_ref = false;
        Some(r)
    } else {
        None
    };
    send_ctrl(ch, &Ctrl::Bye)?;
    let mut notes = res.notes.clone();
    notes.push(format!(
        "tx depth: {}, cq-mod: {}",
        params.tx_depth, params.cq_mod
    ));
    notes.push(format!("inline: {}", res.inline_cap));
    if let Some(rate) = main.tick_rate {
        // perftest converts with /proc/cpuinfo's MHz; this says what fabrik measured, so that
        // the two can be compared in cycles too.
        notes.push(format!(
            "cycle counter: {rate:.2} ticks/usec, measured over the run"
        ));
    }
    let verified = main.verified + host_ref.as_ref().map_or(0, |r| r.verified);
    if params.verify {
        notes.push(format!(
            "verify: payloads checked, {verified} checks passed"
        ));
    }
    let host_rows = host_ref.map(|r| r.bw_rows).unwrap_or_default();
    let ratio = gpuref::ratio_to_host(&main.bw_rows, &host_rows);
    let warning = ratio.and_then(|r| {
        gpuref::warning(
            opts.mem,
            res.registration,
            opts.relaxed_ordering,
            r,
            opts.warn_below,
        )
    });
    if opts.mem != MemKind::Host && !want_ref {
        notes.push(
            if params.test == P2pTest::Lat {
                "host-memory reference: bandwidth tests only"
            } else {
                "host-memory reference: off"
            }
            .into(),
        );
    }
    let memory = fabrik_model::P2pMemory {
        kind: opts.mem.as_str().into(),
        registration: res.registration.as_str().into(),
        access_flags: access_names(res.access)
            .split('|')
            .map(String::from)
            .collect(),
        relaxed_ordering: opts.relaxed_ordering,
        host_reference: host_rows,
        ratio_to_host: ratio,
        warn_below: want_ref.then_some(opts.warn_below),
        warning,
    };
    Ok(P2pReport {
        schema_version: SCHEMA_VERSION,
        source: ResultSource::Fabrik,
        test: params.test,
        transport: "rdma".into(),
        op: Some(params.op.as_str().into()),
        streams: params.qps,
        interfaces: vec![res.ctx.name.clone()],
        device: Some(format!("{}:{}", res.ctx.name, res.port)),
        link_type: Some(
            if res.port_info.is_ethernet() {
                "Ethernet"
            } else {
                "IB"
            }
            .into(),
        ),
        mtu: Some(res.mtu),
        gid_index: Some(res.gid_index),
        results: match params.test {
            P2pTest::Bw => P2pRows::Bw(main.bw_rows),
            P2pTest::Lat => P2pRows::Lat(main.lat_rows),
        },
        per_stream: vec![],
        notes,
        memory: Some(memory),
    })
}

/// Serves one client over an authenticated channel until it says `bye`.
pub fn serve(verbs: &Arc<Verbs>, ch: &mut Channel, opts: &LocalOptions) -> Result<(), VerbsError> {
    let (params, remote) = match expect_ctrl(ch)? {
        Ctrl::Hello {
            version,
            params,
            endpoint,
        } => {
            if version != PROTOCOL_VERSION {
                let msg =
                    format!("protocol version {version}, this server speaks {PROTOCOL_VERSION}");
                let _ = ch.send(&Ctrl::Error {
                    message: msg.clone(),
                });
                return Err(VerbsError::Control(msg));
            }
            (params, endpoint)
        }
        m => return Err(unexpected(&m, "hello")),
    };
    serve_inner(verbs, ch, opts, &params, &remote).map_err(|e| report_failure(ch, e))
}

fn serve_inner(
    verbs: &Arc<Verbs>,
    ch: &mut Channel,
    opts: &LocalOptions,
    params: &TestParams,
    remote: &Endpoint,
) -> Result<(), VerbsError> {
    params.validate().map_err(VerbsError::Unsupported)?;
    validate_for_memory(params, opts.mem)?;
    let mut res = Resources::new(verbs, opts, params)?;
    res.connect(remote)?;
    res.watch = PeerWatch::new(ch.stream());
    if params.op == Op::Send {
        res.post_receives()?;
    }
    send_ctrl(
        ch,
        &Ctrl::Welcome {
            endpoint: res.endpoint(),
        },
    )?;
    loop {
        let bytes = match expect_ctrl(ch)? {
            Ctrl::Start { bytes } if params.sizes.contains(&bytes) => bytes,
            Ctrl::Bye => return Ok(()),
            m => return Err(unexpected(&m, "start or bye")),
        };
        prepare_buffers(&res, bytes)?;
        if params.op == Op::Send {
            res.post_receives()?;
        }
        send_ctrl(ch, &Ctrl::Ready)?;
        let mut mismatches = 0;
        let mut checked = false;
        match (params.test, params.op) {
            (P2pTest::Bw, Op::Send) => {
                mismatches = bw_receiver(&mut res, params, bytes, opts.timeout)?;
                checked = params.verify;
            }
            (P2pTest::Lat, Op::Send | Op::Write) => {
                lat_loop(&mut res, params, remote, bytes, false, opts.timeout)?;
            }
            _ => {}
        }
        match expect_ctrl(ch)? {
            Ctrl::Done { bytes: b } if b == bytes => {}
            m => return Err(unexpected(&m, "done")),
        }
        let server_checks =
            params.op != Op::Read && !(params.test == P2pTest::Bw && params.op == Op::Send);
        if params.verify && server_checks {
            mismatches = check_dst(&res, params, bytes)?;
            checked = true;
        }
        send_ctrl(
            ch,
            &Ctrl::Verified {
                bytes,
                checked,
                mismatches,
            },
        )?;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn gpu_memory_write_latency_is_refused_up_front() {
        let p = TestParams {
            op: Op::Write,
            test: P2pTest::Lat,
            sizes: vec![2],
            iterations: 10,
            tx_depth: 1,
            cq_mod: 1,
            qps: 1,
            inline_size: 0,
            verify: false,
        };
        assert!(validate_for_memory(&p, MemKind::Host).is_ok());
        let e = validate_for_memory(&p, MemKind::Cuda)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--op send"), "{e}");
    }
}
