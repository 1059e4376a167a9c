//! Element types, reduction operators, and the deterministic data every rank starts from so a
//! result can be checked against an expectation computed without the network.

use std::fmt::Debug;
use std::str::FromStr;

use half::{bf16, f16};
use serde::{Deserialize, Serialize};

use crate::ClusterError;

/// The element types, named as nccl-tests names them (`-d`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    /// `int8`.
    Int8,
    /// `uint8`.
    Uint8,
    /// `int32`.
    Int32,
    /// `uint32`.
    Uint32,
    /// `int64`.
    Int64,
    /// `uint64`.
    Uint64,
    /// `half` (IEEE binary16).
    Half,
    /// `float` (binary32).
    Float,
    /// `double` (binary64).
    Double,
    /// `bfloat16`.
    Bfloat16,
}

impl DType {
    /// Every element type.
    pub const ALL: [DType; 10] = [
        DType::Int8,
        DType::Uint8,
        DType::Int32,
        DType::Uint32,
        DType::Int64,
        DType::Uint64,
        DType::Half,
        DType::Float,
        DType::Double,
        DType::Bfloat16,
    ];

    /// nccl-tests' name (`float`).
    pub fn name(self) -> &'static str {
        match self {
            DType::Int8 => "int8",
            DType::Uint8 => "uint8",
            DType::Int32 => "int32",
            DType::Uint32 => "uint32",
            DType::Int64 => "int64",
            DType::Uint64 => "uint64",
            DType::Half => "half",
            DType::Float => "float",
            DType::Double => "double",
            DType::Bfloat16 => "bfloat16",
        }
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::Int8 | DType::Uint8 => 1,
            DType::Half | DType::Bfloat16 => 2,
            DType::Int32 | DType::Uint32 | DType::Float => 4,
            DType::Int64 | DType::Uint64 | DType::Double => 8,
        }
    }
}

impl FromStr for DType {
    type Err = ClusterError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        // nccl-tests also accepts these spellings.
        let t =
            match s {
                "int8" | "char" => DType::Int8,
                "uint8" => DType::Uint8,
                "int32" | "int" => DType::Int32,
                "uint32" => DType::Uint32,
                "int64" => DType::Int64,
                "uint64" => DType::Uint64,
                "half" | "float16" | "fp16" => DType::Half,
                "float" | "float32" | "fp32" => DType::Float,
                "double" | "float64" | "fp64" => DType::Double,
                "bfloat16" | "bf16" => DType::Bfloat16,
                _ => return Err(ClusterError::Unknown {
                    what: "data type",
                    value: s.to_string(),
                    known:
                        "int8, uint8, int32, uint32, int64, uint64, half, float, double, bfloat16",
                }),
            };
        Ok(t)
    }
}

/// Reduction operators (`-o`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RedOp {
    /// `sum`.
    Sum,
    /// `prod`.
    Prod,
    /// `max`.
    Max,
    /// `min`.
    Min,
    /// `avg`: the sum divided by the number of ranks.
    Avg,
}

impl RedOp {
    /// nccl-tests' name (`sum`).
    pub fn name(self) -> &'static str {
        match self {
            RedOp::Sum => "sum",
            RedOp::Prod => "prod",
            RedOp::Max => "max",
            RedOp::Min => "min",
            RedOp::Avg => "avg",
        }
    }
}

impl FromStr for RedOp {
    type Err = ClusterError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "sum" => RedOp::Sum,
            "prod" => RedOp::Prod,
            "max" => RedOp::Max,
            "min" => RedOp::Min,
            "avg" => RedOp::Avg,
            _ => {
                return Err(ClusterError::Unknown {
                    what: "reduction",
                    value: s.to_string(),
                    known: "sum, prod, max, min, avg",
                })
            }
        })
    }
}

/// An element type the collectives move and reduce. Integer arithmetic wraps, as on a GPU.
pub trait Elem: bytemuck::Pod + Send + Sync + PartialEq + Debug + 'static {
    /// The [`DType`] this Rust type stands for.
    const DTYPE: DType;
    /// The element nearest `v` (wrapping for integers).
    fn from_i64(v: i64) -> Self;
    /// The element as a float, for messages and tolerances.
    fn to_f64(self) -> f64;
    /// Sum (wrapping for integers).
    fn radd(self, o: Self) -> Self;
    /// Product (wrapping for integers).
    fn rmul(self, o: Self) -> Self;
    /// The larger.
    fn rmax(self, o: Self) -> Self;
    /// The smaller.
    fn rmin(self, o: Self) -> Self;
    /// Divided by `n` (at least 1), for `avg`.
    fn div_n(self, n: u32) -> Self;
    /// Whether `self` is an acceptable result where `want` was expected.
    fn close_to(self, want: Self) -> bool;
}

macro_rules! int_elem {
    ($t:ty, $d:expr) => {
        impl Elem for $t {
            const DTYPE: DType = $d;
            fn from_i64(v: i64) -> Self {
                v as $t
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn radd(self, o: Self) -> Self {
                self.wrapping_add(o)
            }
            fn rmul(self, o: Self) -> Self {
                self.wrapping_mul(o)
            }
            fn rmax(self, o: Self) -> Self {
                Ord::max(self, o)
            }
            fn rmin(self, o: Self) -> Self {
                Ord::min(self, o)
            }
            fn div_n(self, n: u32) -> Self {
                self / (n as $t).max(1)
            }
            fn close_to(self, want: Self) -> bool {
                self == want
            }
        }
    };
}

int_elem!(i8, DType::Int8);
int_elem!(u8, DType::Uint8);
int_elem!(i32, DType::Int32);
int_elem!(u32, DType::Uint32);
int_elem!(i64, DType::Int64);
int_elem!(u64, DType::Uint64);

macro_rules! float_elem {
    ($t:ty, $d:expr, $from:expr, $to:expr, $tol:expr) => {
        impl Elem for $t {
            const DTYPE: DType = $d;
            fn from_i64(v: i64) -> Self {
                $from(v as f64)
            }
            fn to_f64(self) -> f64 {
                $to(self)
            }
            fn radd(self, o: Self) -> Self {
                self + o
            }
            fn rmul(self, o: Self) -> Self {
                self * o
            }
            fn rmax(self, o: Self) -> Self {
                if o > self {
                    o
                } else {
                    self
                }
            }
            fn rmin(self, o: Self) -> Self {
                if o < self {
                    o
                } else {
                    self
                }
            }
            fn div_n(self, n: u32) -> Self {
                $from($to(self) / f64::from(n.max(1)))
            }
            fn close_to(self, want: Self) -> bool {
                let (a, b) = ($to(self), $to(want));
                a == b || (a - b).abs() <= $tol * b.abs().max(1.0)
            }
        }
    };
}

float_elem!(
    f32,
    DType::Float,
    |v: f64| v as f32,
    |x: f32| f64::from(x),
    1e-6
);
float_elem!(f64, DType::Double, |v: f64| v, |x: f64| x, 1e-12);
float_elem!(f16, DType::Half, f16::from_f64, f16::to_f64, 1e-3);
float_elem!(bf16, DType::Bfloat16, bf16::from_f64, bf16::to_f64, 1e-2);

/// `dst[i] = dst[i] op src[i]` (avg accumulates as a sum; [`finish_avg`] divides at the end).
pub fn reduce_into<T: Elem>(dst: &mut [T], src: &[T], op: RedOp) {
    // One loop per operator so each compiles to a tight (vectorisable) loop.
    let n = dst.len().min(src.len());
    let (dst, src) = (&mut dst[..n], &src[..n]);
    match op {
        RedOp::Sum | RedOp::Avg => dst.iter_mut().zip(src).for_each(|(d, s)| *d = d.radd(*s)),
        RedOp::Prod => dst.iter_mut().zip(src).for_each(|(d, s)| *d = d.rmul(*s)),
        RedOp::Max => dst.iter_mut().zip(src).for_each(|(d, s)| *d = d.rmax(*s)),
        RedOp::Min => dst.iter_mut().zip(src).for_each(|(d, s)| *d = d.rmin(*s)),
    }
}

/// `dst[i] = a[i] op b[i]`: the first reduction step of an out-of-place run, which reads the
/// input buffer instead of copying it into the output first.
pub fn reduce_from<T: Elem>(dst: &mut [T], a: &[T], b: &[T], op: RedOp) {
    let n = dst.len().min(a.len()).min(b.len());
    let (dst, a, b) = (&mut dst[..n], &a[..n], &b[..n]);
    let it = dst.iter_mut().zip(a.iter().zip(b));
    match op {
        RedOp::Sum | RedOp::Avg => it.for_each(|(d, (x, y))| *d = x.radd(*y)),
        RedOp::Prod => it.for_each(|(d, (x, y))| *d = x.rmul(*y)),
        RedOp::Max => it.for_each(|(d, (x, y))| *d = x.rmax(*y)),
        RedOp::Min => it.for_each(|(d, (x, y))| *d = x.rmin(*y)),
    }
}

/// Divides every element by `ranks` when `op` is `avg` (the sum already done); nothing otherwise.
pub fn finish_avg<T: Elem>(buf: &mut [T], op: RedOp, ranks: u32) {
    if op == RedOp::Avg {
        buf.iter_mut().for_each(|x| *x = x.div_n(ranks));
    }
}

/// The value rank `rank` holds at `index` before a reduction. Small integers keep every sum
/// and product exact in every type (half and bfloat16 included) for up to 64 ranks, so the
/// check can demand equality; products get one factor 2 per index, the rest are ±1.
pub fn reduce_input(rank: u32, index: usize, op: RedOp, ranks: u32) -> i64 {
    let (r, i) = (u64::from(rank), index as u64);
    match op {
        RedOp::Prod => {
            if (i + r) % u64::from(ranks.max(1)) == 0 {
                2
            } else if (i.wrapping_mul(7) + r * 3) % 5 == 0 {
                -1
            } else {
                1
            }
        }
        _ => ((r * 7 + i.wrapping_mul(13) + 3) % 5) as i64 - 2,
    }
}

/// The value rank `rank` holds at `index` for data-movement operations: varied enough that a
/// block landing in the wrong place is caught.
pub fn move_input(rank: u32, index: usize) -> i64 {
    ((u64::from(rank) * 131 + (index as u64).wrapping_mul(7)) % 97) as i64 - 48
}

/// The reduction of every rank's input at `index`, computed locally.
pub fn expected_reduction<T: Elem>(index: usize, op: RedOp, ranks: u32) -> T {
    let mut acc = T::from_i64(reduce_input(0, index, op, ranks));
    for r in 1..ranks {
        let v = T::from_i64(reduce_input(r, index, op, ranks));
        acc = match op {
            RedOp::Sum | RedOp::Avg => acc.radd(v),
            RedOp::Prod => acc.rmul(v),
            RedOp::Max => acc.rmax(v),
            RedOp::Min => acc.rmin(v),
        };
    }
    if op == RedOp::Avg {
        acc = acc.div_n(ranks);
    }
    acc
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for d in DType::ALL {
            assert_eq!(d.name().parse::<DType>().unwrap(), d);
        }
        assert!("complex".parse::<DType>().is_err());
        assert_eq!("avg".parse::<RedOp>().unwrap(), RedOp::Avg);
        assert!("xor".parse::<RedOp>().is_err());
    }

    #[test]
    fn expected_sums_are_exact_in_half_and_bfloat16() {
        for i in 0..200 {
            let want: i64 = (0..64).map(|r| reduce_input(r, i, RedOp::Sum, 64)).sum();
            assert_eq!(
                expected_reduction::<f16>(i, RedOp::Sum, 64).to_f64(),
                want as f64
            );
            assert_eq!(
                expected_reduction::<bf16>(i, RedOp::Sum, 64).to_f64(),
                want as f64
            );
            let prod: i64 = (0..64)
                .map(|r| reduce_input(r, i, RedOp::Prod, 64))
                .product();
            assert_eq!(prod.abs(), 2);
            assert_eq!(
                expected_reduction::<f16>(i, RedOp::Prod, 64).to_f64(),
                prod as f64
            );
        }
    }

    #[test]
    fn reduce_into_applies_each_operator() {
        let mut d = vec![1i32, 5, -3];
        reduce_into(&mut d, &[2, 2, 2], RedOp::Max);
        assert_eq!(d, [2, 5, 2]);
        reduce_into(&mut d, &[3, 3, 3], RedOp::Prod);
        assert_eq!(d, [6, 15, 6]);
        let mut f = vec![1.0f32, 2.0];
        reduce_into(&mut f, &[3.0, 4.0], RedOp::Avg);
        finish_avg(&mut f, RedOp::Avg, 2);
        assert_eq!(f, [2.0, 3.0]);
    }
}
