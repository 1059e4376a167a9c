//! The namespace testbed for people and benchmark scripts, the same layout the tests build:
//! host h is namespace NAME-h<h>; link k is veth eth<k> in the host, its peer h<h>l<k> in
//! bridge br<k> of the switch namespace NAME-sw; address 10.77.<k>.<h+1>/24.

use std::os::unix::process::CommandExt;
use std::process::{Command, ExitCode};

use fabrik_testbed::{require_root, Testbed, TestbedError};

const USAGE: &str = "\
fabrik-netns: namespace hosts joined by veth links, one subnet per link (10.77.LINK.HOST+1/24)

usage:
  fabrik-netns up NAME HOSTS LINKS [--rate RATE] [--mtu MTU]   build (RATE shapes every link, both ways, tc tbf)
  fabrik-netns shape NAME HOST LINK RATE                      shape one host's link both ways
  fabrik-netns exec NAME HOST CMD...                          run CMD inside host HOST
  fabrik-netns addr HOST LINK                                 print the address of HOST on LINK
  fabrik-netns down NAME                                      kill what runs inside and delete it all
  fabrik-netns list                                           testbed namespaces on this machine
Needs root and iproute2. `up` removes a testbed of the same NAME first.";

/// Why a command could not run: its usage was wrong, or the testbed failed.
enum Failure {
    Usage(String),
    Testbed(TestbedError),
}

impl From<TestbedError> for Failure {
    fn from(e: TestbedError) -> Self {
        Failure::Testbed(e)
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(msg)) if msg.is_empty() => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
        Err(Failure::Usage(msg)) => {
            eprintln!("fabrik-netns: {msg}");
            ExitCode::from(2)
        }
        Err(Failure::Testbed(e)) => {
            eprintln!("fabrik-netns: {e}");
            ExitCode::from(2)
        }
    }
}

fn usage(msg: &str) -> Failure {
    Failure::Usage(msg.to_string())
}

fn number(text: &str, what: &str) -> Result<usize, Failure> {
    text.parse()
        .map_err(|_| usage(&format!("{what} must be a number, not {text:?}")))
}

fn run(args: &[String]) -> Result<(), Failure> {
    let Some((cmd, rest)) = args.split_first() else {
        return Err(usage(""));
    };
    let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
    match (cmd.as_str(), rest.as_slice()) {
        ("up", [name, hosts, links, opts @ ..]) => {
            require_root()?;
            up(name, number(hosts, "HOSTS")?, number(links, "LINKS")?, opts)
        }
        ("up", _) => Err(usage("up NAME HOSTS LINKS [--rate R] [--mtu M]")),
        ("down", [name]) => {
            require_root()?;
            fabrik_testbed::down(name);
            Ok(())
        }
        ("down", _) => Err(usage("down NAME")),
        ("shape", [name, host, link, rate]) => {
            require_root()?;
            let (host, link) = (number(host, "HOST")?, number(link, "LINK")?);
            fabrik_testbed::shape_link(name, host, link, rate)?;
            Ok(())
        }
        ("shape", _) => Err(usage("shape NAME HOST LINK RATE")),
        ("exec", [name, host, argv @ ..]) if !argv.is_empty() => {
            require_root()?;
            let host = number(host, "HOST")?;
            // Replaces this process, so the caller's job control and signals reach CMD.
            let e = Command::new("ip")
                .args(["netns", "exec", &format!("{name}-h{host}")])
                .args(argv)
                .exec();
            Err(Failure::Testbed(TestbedError::Command {
                command: format!("ip netns exec {name}-h{host} {}", argv.join(" ")),
                detail: e.to_string(),
            }))
        }
        ("exec", _) => Err(usage("exec NAME HOST CMD...")),
        ("addr", [host, link]) => {
            let (h, l) = (number(host, "HOST")?, number(link, "LINK")?);
            let a = fabrik_testbed::addr(h, l).ok_or_else(|| {
                usage(&format!(
                    "host {h} link {l} is outside 250 hosts x 200 links"
                ))
            })?;
            println!("{a}");
            Ok(())
        }
        ("addr", _) => Err(usage("addr HOST LINK")),
        ("list", []) => {
            for ns in fabrik_testbed::list()? {
                println!("{ns}");
            }
            Ok(())
        }
        ("list", _) => Err(usage("list takes no arguments")),
        (other, _) => Err(usage(&format!(
            "unknown command {other} (up, down, shape, exec, addr, list)"
        ))),
    }
}

fn up(name: &str, hosts: usize, links: usize, opts: &[&str]) -> Result<(), Failure> {
    let mut b = Testbed::builder()
        .name(name)
        .hosts(hosts)
        .links_per_host(links);
    let (mut rate, mut mtu) = (None, None);
    let mut it = opts.iter();
    while let Some(opt) = it.next() {
        if !matches!(*opt, "--rate" | "--mtu") {
            return Err(usage(&format!("unknown option {opt}")));
        }
        let value = it
            .next()
            .ok_or_else(|| usage(&format!("{opt} needs a value")))?;
        match *opt {
            "--rate" => rate = Some(*value),
            "--mtu" => {
                mtu = Some(
                    value
                        .parse::<u32>()
                        .map_err(|_| usage(&format!("--mtu must be a number, not {value:?}")))?,
                )
            }
            _ => {}
        }
    }
    if let Some(r) = rate {
        for k in 0..links {
            b = b.shape(k, r);
        }
    }
    if let Some(m) = mtu {
        b = b.mtu(m);
    }
    let tb = b.build()?;
    let name = tb.keep();
    let mut line = format!("testbed {name}: {hosts} hosts x {links} links");
    if let Some(r) = rate {
        line.push_str(&format!(", every link shaped to {r}"));
    }
    if let Some(m) = mtu {
        line.push_str(&format!(", mtu {m}"));
    }
    println!("{line}");
    Ok(())
}
