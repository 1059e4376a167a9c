//! `mlx5_0:1`: a device and port as the command line names them (`--device`).

use std::fmt;
use std::str::FromStr;

/// A device and one of its ports; the port is 1 when the text names none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortSpec {
    /// The device (`mlx5_0`).
    pub device: String,
    /// The port, from 1.
    pub port: u8,
}

/// A `NAME:PORT` whose port is not a number from 0 to 255.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad port in --device {0}")]
pub struct BadPort(pub String);

impl FromStr for PortSpec {
    type Err = BadPort;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s.split_once(':') {
            Some((device, p)) => PortSpec {
                device: device.to_string(),
                port: p.parse().map_err(|_| BadPort(s.to_string()))?,
            },
            None => PortSpec {
                device: s.to_string(),
                port: 1,
            },
        })
    }
}

impl fmt::Display for PortSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.device, self.port)
    }
}

/// The device and port of an optional `--device`: `(None, 1)` without one.
pub fn device_port(spec: Option<&str>) -> Result<(Option<String>, u8), BadPort> {
    Ok(match spec.map(str::parse::<PortSpec>).transpose()? {
        Some(p) => (Some(p.device), p.port),
        None => (None, 1),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn a_device_with_and_without_its_port() {
        assert_eq!(
            "rxe0:2".parse::<PortSpec>().unwrap(),
            PortSpec {
                device: "rxe0".into(),
                port: 2
            }
        );
        assert_eq!("mlx5_0".parse::<PortSpec>().unwrap().port, 1);
        assert_eq!(device_port(None).unwrap(), (None, 1));
        assert_eq!(
            device_port(Some("mlx5_0:x")).unwrap_err().to_string(),
            "bad port in --device mlx5_0:x"
        );
        assert_eq!(
            "mlx5_0:300".parse::<PortSpec>().unwrap_err(),
            BadPort("mlx5_0:300".into())
        );
    }
}
