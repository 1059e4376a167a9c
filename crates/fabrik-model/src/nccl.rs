//! Facts of NCCL's API that several crates name.

/// The name of an `ncclResult_t` code, as `nccl.h` spells it (0-5 since NCCL 2.0,
/// `ncclRemoteError` 6 and `ncclInProgress` 7 since 2.13/2.14), or `None` for a code NCCL does
/// not define.
pub fn result_name(code: u32) -> Option<&'static str> {
    Some(match code {
        0 => "ncclSuccess",
        1 => "ncclUnhandledCudaError",
        2 => "ncclSystemError",
        3 => "ncclInternalError",
        4 => "ncclInvalidArgument",
        5 => "ncclInvalidUsage",
        6 => "ncclRemoteError",
        7 => "ncclInProgress",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::result_name;

    #[test]
    fn names_follow_nccl_h() {
        assert_eq!(result_name(0), Some("ncclSuccess"));
        assert_eq!(result_name(3), Some("ncclInternalError"));
        assert_eq!(result_name(7), Some("ncclInProgress"));
        assert_eq!(result_name(8), None);
    }
}
