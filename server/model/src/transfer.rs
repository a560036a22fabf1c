//! Where a learner's request to move their code to another account stands.

use crate::text_enum::text_enum;

text_enum! {
    /// A transfer request's state (`transfer_requests.status`).
    pub enum TransferStatus (InvalidTransferStatus: "a transfer status is awaiting_target, awaiting_admin, approved, refused or cancelled") {
        /// The link went to the receiving address; nobody confirmed yet.
        AwaitingTarget = "awaiting_target",
        /// The receiving account confirmed; the tenant's admins decide.
        AwaitingAdmin = "awaiting_admin",
        /// An admin approved: the code moved.
        Approved = "approved",
        /// An admin refused: the code stayed.
        Refused = "refused",
        /// The learner withdrew it, or asked again (the newer request
        /// replaces it).
        Cancelled = "cancelled",
    }
}

impl TransferStatus {
    /// Still waiting for someone (the receiving account or an admin).
    pub fn is_open(self) -> bool {
        matches!(self, Self::AwaitingTarget | Self::AwaitingAdmin)
    }

    /// In English, as "this request is …" ends.
    pub fn phrase(self) -> &'static str {
        match self {
            Self::AwaitingTarget => "waiting for the receiving account to confirm",
            Self::AwaitingAdmin => "waiting for the course's team",
            Self::Approved => "approved already",
            Self::Refused => "refused already",
            Self::Cancelled => "cancelled",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_reads_back_and_only_the_waiting_ones_are_open() {
        for &status in TransferStatus::ALL {
            assert_eq!(TransferStatus::parse(status.as_str()), Ok(status));
        }
        let open: Vec<_> = TransferStatus::ALL.iter().filter(|s| s.is_open()).collect();
        assert_eq!(
            open,
            [
                &TransferStatus::AwaitingTarget,
                &TransferStatus::AwaitingAdmin
            ]
        );
        assert_eq!(TransferStatus::parse("approve"), Err(InvalidTransferStatus));
    }
}
