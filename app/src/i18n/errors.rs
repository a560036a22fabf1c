//! The domain's error messages in Chinese (ssr only).
//!
//! The `engine` crate speaks English (its `Display` texts are what logs and
//! the JSON API show). The pages translate each expected outcome here, by an
//! exhaustive match, so a new variant cannot reach a Chinese page in
//! English without the compiler pointing at this file.

use engine::{
    accounts::{AccountError, DisplayName, Password},
    learners::LearnerError,
    settlement::SettlementError,
    shares::ShareError,
    storage::StorageError,
    team::TeamError,
    tenants::TenantError,
    tokens::TokenError,
    webhooks::WebhookError,
};

use super::{Lang, lang};

/// An error's message in the current language.
pub fn message<E: Localized>(error: &E) -> String {
    match lang() {
        Lang::En => error.to_string(),
        Lang::Zh => error.zh(),
    }
}

/// An error with a Chinese message beside its English `Display`.
pub trait Localized: std::fmt::Display {
    fn zh(&self) -> String;
}

impl Localized for ShareError {
    fn zh(&self) -> String {
        match self {
            Self::InvalidTitle => "标题需要 1 到 200 个可见字符".into(),
            Self::InvalidSlug => {
                "链接名为 1 到 64 个小写字母、数字或连字符，且不能以连字符开头或结尾".into()
            }
            Self::SlugTaken => "这个链接名已被占用，请换一个".into(),
            Self::InvalidDescription => "简介最多 10,000 个字符".into(),
            Self::InvalidStatus => "状态只能是草稿、开放中、已暂停或已归档".into(),
            Self::InvalidCodeState => "兑换码状态只能是未使用、已绑定或已作废".into(),
            Self::ResourceNotFound => "没有这个资源".into(),
            Self::CodeNotReplaceable => "只有未使用的兑换码可以补发（其他的请先解绑或作废）".into(),
            Self::QuotaBelowUse { used } => {
                format!("已计入 {used} 次访问，总访问上限不能低于这个数")
            }
            Self::LearnerLimitBelowUse { used } => {
                format!("已有学员使用了 {used} 次访问，每人访问上限不能低于这个数")
            }
            Self::SlugLocked => {
                "已用此链接生成过兑换码，链接不能再改（已打印的卡片和已发出的链接会失效）".into()
            }
            Self::ResourceInUse { accesses } => {
                format!("学员已打开这个资源 {accesses} 次；勾选“仍然删除”才能删除")
            }
            Self::InvalidLimit => "上限是 1 到 1,000,000,000 之间的整数".into(),
            Self::InvalidWindow => "有效期的结束时间必须晚于开始时间".into(),
            Self::InvalidCount => "每批可生成 1 到 100,000 个兑换码".into(),
            Self::InvalidLabel => "批次名称最多 120 个字符".into(),
            Self::InvalidReason => "必须填写原因（1 到 500 个字符）".into(),
            Self::BatchAlreadyIssued { batch_id, count } => format!(
                "这个批次已经生成过（{batch_id}，{count} 个兑换码）；兑换码只在生成时显示一次"
            ),
            Self::IdempotencyKeyReused => "这个 Idempotency-Key 已用于另一个请求".into(),
            Self::ShareNotFound => "没有这个课程分享".into(),
            Self::CodeNotFound => "没有这个兑换码".into(),
            Self::CodeNotBound => "这个兑换码没有绑定任何人".into(),
            Self::Unexpected(_) => "服务器出错了".into(),
        }
    }
}

impl Localized for TokenError {
    fn zh(&self) -> String {
        match self {
            Self::InvalidName => "令牌名称为 1 到 80 个字符".into(),
            Self::InvalidScope => "请至少选择一个权限：读取、写入、集成".into(),
            Self::InvalidExpiry => "令牌的到期时间必须在将来，且不超过 10 年".into(),
            Self::BeyondCaller => {
                "令牌不能创建比自身权限更多或有效期更长的令牌，也只能吊销自身及其创建的令牌".into()
            }
            Self::TooMany => format!(
                "本机构已有 {} 个有效令牌：请先吊销一个",
                engine::tokens::MAX_LIVE
            ),
            Self::NotFound => "没有这个令牌".into(),
            Self::Unexpected(_) => "服务器出错了".into(),
        }
    }
}

impl Localized for AccountError {
    fn zh(&self) -> String {
        match self {
            Self::InvalidEmail => "请输入有效的邮箱地址，例如 name@example.com".into(),
            Self::InvalidPassword => format!(
                "密码需要 {} 到 {} 个字符",
                Password::MIN_CHARS,
                Password::MAX_CHARS
            ),
            Self::InvalidDisplayName => {
                format!("昵称需要 1 到 {} 个可见字符", DisplayName::MAX_CHARS)
            }
            Self::EmailTaken => "这个邮箱已注册，请直接登录".into(),
            Self::InvalidCredentials => "邮箱或密码错误".into(),
            Self::Disabled => "这个账号已被停用，请联系课程提供方".into(),
            Self::LinkInvalid => "这个链接已过期或已被使用，请重新获取".into(),
            Self::SameEmail => "这已经是你的邮箱地址".into(),
            Self::Unexpected(_) => "服务器出错了".into(),
        }
    }
}

impl Localized for SettlementError {
    fn zh(&self) -> String {
        match self {
            Self::CodeRequired => "请先输入兑换码".into(),
            Self::CodeBound => "这个兑换码已被其他账号使用".into(),
            Self::CodeRevoked => "这个兑换码已被课程提供方作废".into(),
            Self::WrongShare => "这个兑换码不属于这门课程".into(),
            Self::InvalidCode => "这个兑换码无效".into(),
            Self::AlreadyHasAccess => "你已经可以访问这门课程".into(),
            Self::ShareUnavailable(why) => share_unavailable(*why).into(),
            Self::QuotaExhausted => "这门课程的访问次数已用完".into(),
            Self::LearnerLimitReached => "你在这门课程的访问次数已用完".into(),
            Self::AccountDisabled => "这个账号已被停用".into(),
            Self::LearnerSuspended => "课程提供方已停用你访问其课程的权限，请联系对方".into(),
            Self::EmailNotVerified => {
                "请先验证你的邮箱：打开我们发给你的链接，然后再打开这里".into()
            }
            Self::ResourceNotFound => "没有这个资源".into(),
            Self::OpenFromCoursePage => "请从课程页面打开这个资源".into(),
            Self::RequestIdReused => {
                "这个请求编号已用于另一个请求，或其访问已结束；请换一个新的编号重试".into()
            }
            Self::InvalidRequestId => "请求编号为 1 到 200 个可见字符".into(),
            Self::Busy => "有人正在使用这个兑换码，请稍后再试".into(),
            Self::Unavailable => "服务暂时降级，请稍后再试".into(),
            Self::Unexpected(_) => "服务器出错了".into(),
        }
    }
}

/// Why a share is closed to learners, in Chinese.
pub fn share_unavailable(why: engine::shares::Unavailability) -> &'static str {
    use engine::shares::Unavailability as U;
    match why {
        U::Paused => "课程提供方已暂停这门课程",
        U::NotOpenYet => "这门课程尚未开放",
        U::Closed => "这门课程已结束",
        U::LimitReached => "这门课程的访问次数已用完",
        U::NotAvailable => "这门课程目前无法访问",
    }
}

impl Localized for StorageError {
    fn zh(&self) -> String {
        match self {
            Self::TooLarge { limit } => format!("文件超过了 {limit} 字节的上限"),
            Self::Unexpected(_) => "服务器出错了".into(),
        }
    }
}

impl Localized for TenantError {
    fn zh(&self) -> String {
        match self {
            Self::InvalidSlug => {
                "机构标识为 1 到 48 个小写字母、数字或连字符，且不能以连字符开头或结尾".into()
            }
            Self::InvalidName => "机构名称需要 1 到 120 个可见字符".into(),
            Self::SlugTaken => "这个机构标识已被占用，请换一个".into(),
            Self::UnknownTimeZone(_) => {
                "时区请用 IANA 名称，例如 Asia/Shanghai、Asia/Taipei 或 UTC".into()
            }
            Self::Unexpected(_) => "服务器出错了".into(),
        }
    }
}

impl Localized for WebhookError {
    fn zh(&self) -> String {
        match self {
            Self::InvalidUrl => {
                "接收地址须为 http:// 或 https:// 开头、最多 2,000 个字符的网址".into()
            }
            Self::InvalidEvents => "请至少选择一个事件".into(),
            Self::EndpointNotFound => "没有这个接收地址".into(),
            Self::DeliveryNotFound => "没有这条投递记录，或它并未进入死信".into(),
            Self::Unexpected(_) => "服务器出错了".into(),
        }
    }
}

impl Localized for TeamError {
    fn zh(&self) -> String {
        match self {
            Self::LastOwner => "团队至少需要一位所有者：请先把其他人设为所有者".into(),
            Self::AlreadyMember => "这个人已经是团队成员".into(),
            Self::MemberNotFound => "没有这位成员".into(),
            Self::InvitationNotFound => "没有这份邀请".into(),
            Self::InvitationInvalid => "这份邀请已过期、已撤回或已被使用，请重新获取".into(),
            Self::WrongAccount { invited } => {
                format!("这份邀请是发给 {invited} 的，请用这个邮箱登录后接受")
            }
            Self::Unexpected(_) => "服务器出错了".into(),
        }
    }
}

impl Localized for LearnerError {
    fn zh(&self) -> String {
        match self {
            Self::NotFound => "没有这位学员".into(),
            Self::Unexpected(_) => "服务器出错了".into(),
        }
    }
}

impl Localized for engine::codes::CodeFormatError {
    fn zh(&self) -> String {
        // One translation, shared with the browser's own check (`i18n.rs`).
        super::code_format_error_zh(self).to_owned()
    }
}

impl Localized for service::ServiceError {
    fn zh(&self) -> String {
        use service::ServiceError as E;
        match self {
            E::Unauthenticated => "请先登录".into(),
            E::Forbidden => "你没有权限访问这里".into(),
            E::NotFound => "找不到这个页面".into(),
            E::Throttled {
                scope,
                retry_after_secs: secs,
                ..
            } => {
                let what = attempts_zh(*scope);
                if *secs >= 120 {
                    format!("{what}过于频繁，请 {} 分钟后再试。", secs.div_ceil(60))
                } else {
                    format!("{what}过于频繁，请 {secs} 秒后再试。")
                }
            }
            E::Unavailable { .. } => "服务繁忙，请稍后再试".into(),
            E::PasswordsDiffer => "两次输入的密码不一致".into(),
            E::NewPasswordsDiffer => "两次输入的新密码不一致".into(),
            E::WrongCurrentPassword => "当前密码不正确".into(),
            E::InvalidNewPassword(e) | E::Account(e) => e.zh(),
            E::InvalidNewEmail => "请输入有效的邮箱地址，例如 name@example.com".into(),
            E::NewEmailTaken => "这个邮箱已被其他账号使用".into(),
            E::InvalidRole => "角色只能是所有者、管理员或客服".into(),
            E::SignupClosed => "本服务器未开放在线创建机构，请联系运营方".into(),
            E::VerifyEmailFirst => "请先验证你的邮箱".into(),
            E::Team(e) => e.zh(),
            E::Tenant(e) => e.zh(),
            E::Learner(e) => e.zh(),
            E::Settlement(e) => e.zh(),
            E::Share(e) => e.zh(),
            E::Format(e) => e.zh(),
            E::Unexpected(_) => "服务器出错了".into(),
        }
    }
}

/// What a throttle counts, in Chinese (English: `service::error::attempts`).
fn attempts_zh(scope: engine::coordination::ThrottleScope) -> &'static str {
    use engine::coordination::ThrottleScope as S;
    match scope {
        S::SignInEmail => "这个账号的登录尝试",
        S::SignInIp => "来自你所在网络的登录尝试",
        S::RegisterIp => "来自你所在网络的注册",
        S::CodeAccount => "兑换码尝试",
        S::CodeIp => "来自你所在网络的兑换码尝试",
        S::CodeShare => "这门课程的兑换码尝试",
        S::PasswordChangeAccount => "修改密码的尝试",
        S::PasswordChangeIp => "来自你所在网络的修改密码尝试",
        S::ResetEmail => "这个邮箱的重置密码请求",
        S::MailIp => "来自你所在网络的发信请求",
        S::MailAccount => "你的账号的发信请求",
        S::ApiToken => "这个 API 令牌的调用",
    }
}
