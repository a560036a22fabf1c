//! The languages of the interface and of mails: English, Simplified
//! Chinese (zh-CN) and Traditional Chinese (zh-TW, also for Hong Kong and
//! Macau). Their words are in the catalogues ([`crate::catalogue`]).
//!
//! Here rather than in the pages' crate because the server writes in them
//! too: a mail is written in the language of whoever asked for it (a
//! reset requested from a Chinese page arrives in Chinese), which the
//! engine stores beside the mail (its `tag`: `en`, `zh-CN`, `zh-TW`). How a request
//! chooses its language (the switcher's cookie, then `Accept-Language`)
//! is also here, so the pages and the mails agree.

use serde::{Deserialize, Serialize};

/// A language of the interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Lang {
    #[default]
    En,
    /// 简体中文.
    ZhCn,
    /// 繁體中文.
    ZhTw,
}

impl Lang {
    /// The cookie the switcher sets.
    pub const COOKIE: &'static str = "lang";
    /// Every language, in the switcher's order.
    pub const ALL: [Lang; 3] = [Lang::En, Lang::ZhCn, Lang::ZhTw];

    /// The BCP 47 tag written into `<html lang>` and the switcher's links.
    pub fn tag(self) -> &'static str {
        match self {
            Self::En => "en",
            Self::ZhCn => "zh-CN",
            Self::ZhTw => "zh-TW",
        }
    }

    /// The language's own name, for the switcher.
    pub fn name(self) -> &'static str {
        match self {
            Self::En => "English",
            Self::ZhCn => "简体中文",
            Self::ZhTw => "繁體中文",
        }
    }

    /// A language from a tag (`zh`, `zh-CN`, `zh-Hant`, `zh-HK`, `en-GB`,
    /// …): Traditional Chinese for the Hant script and for Taiwan, Hong
    /// Kong and Macau, Simplified Chinese for any other Chinese.
    pub fn parse(tag: &str) -> Option<Self> {
        let mut subtags = tag.trim().split(['-', '_']).map(str::to_ascii_lowercase);
        match subtags.next()?.as_str() {
            "en" => Some(Self::En),
            "zh" => {
                let traditional = subtags
                    .take_while(|s| s != "hans")
                    .any(|s| matches!(s.as_str(), "hant" | "tw" | "hk" | "mo"));
                Some(if traditional { Self::ZhTw } else { Self::ZhCn })
            }
            _ => None,
        }
    }

    /// The best language for an `Accept-Language` header: the supported
    /// one with the highest quality (earliest on ties).
    pub fn from_accept_language(header: &str) -> Option<Self> {
        let mut best: Option<(Self, f32)> = None;
        for item in header.split(',') {
            let mut parts = item.split(';');
            let Some(lang) = parts.next().and_then(Self::parse) else {
                continue;
            };
            let quality = parts
                .find_map(|p| p.trim().strip_prefix("q="))
                .map_or(Some(1.0), |q| q.trim().parse::<f32>().ok())
                .unwrap_or(0.0);
            if quality > 0.0 && best.is_none_or(|(_, q)| quality > q) {
                best = Some((lang, quality));
            }
        }
        best.map(|(lang, _)| lang)
    }

    /// The language of a request: the switcher's cookie, then
    /// `Accept-Language`, then English.
    pub fn from_headers(headers: &http::HeaderMap) -> Self {
        let cookie = headers
            .get_all(http::header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .find_map(|pair| {
                let (name, value) = pair.trim().split_once('=')?;
                (name == Self::COOKIE).then(|| Self::parse(value)).flatten()
            });
        cookie
            .or_else(|| {
                headers
                    .get(http::header::ACCEPT_LANGUAGE)
                    .and_then(|v| v.to_str().ok())
                    .and_then(Self::from_accept_language)
            })
            .unwrap_or_default()
    }
}

impl std::fmt::Display for Lang {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.tag())
    }
}

#[cfg(test)]
mod tests {
    use super::Lang;

    #[test]
    fn accept_language_picks_the_best_supported_language() {
        assert_eq!(
            Lang::from_accept_language("zh-CN,zh;q=0.9,en;q=0.8"),
            Some(Lang::ZhCn)
        );
        assert_eq!(Lang::from_accept_language("en-US,en;q=0.9"), Some(Lang::En));
        assert_eq!(
            Lang::from_accept_language("fr-FR, en;q=0.5, zh;q=0.7"),
            Some(Lang::ZhCn)
        );
        assert_eq!(Lang::from_accept_language("zh-Hant-TW"), Some(Lang::ZhTw));
        assert_eq!(
            Lang::from_accept_language("zh-TW,zh;q=0.9"),
            Some(Lang::ZhTw)
        );
        assert_eq!(Lang::from_accept_language("zh-HK"), Some(Lang::ZhTw));
        assert_eq!(Lang::from_accept_language("zh-hant"), Some(Lang::ZhTw));
        assert_eq!(Lang::from_accept_language("zh-Hans-HK"), Some(Lang::ZhCn));
        assert_eq!(Lang::from_accept_language("zh-SG"), Some(Lang::ZhCn));
        assert_eq!(Lang::from_accept_language("de, fr;q=0.8"), None);
        assert_eq!(
            Lang::from_accept_language("zh;q=0, en;q=0.1"),
            Some(Lang::En)
        );
        assert_eq!(Lang::from_accept_language(""), None);
        assert_eq!(Lang::from_accept_language("zh;q=banana"), None);
    }

    #[test]
    fn the_cookie_wins_over_accept_language() {
        let mut headers = http::HeaderMap::new();
        headers.insert(http::header::ACCEPT_LANGUAGE, "zh-CN".parse().unwrap());
        assert_eq!(Lang::from_headers(&headers), Lang::ZhCn);
        headers.insert(http::header::COOKIE, "a=1; lang=en; b=2".parse().unwrap());
        assert_eq!(Lang::from_headers(&headers), Lang::En);
        headers.insert(http::header::COOKIE, "lang=zh-TW".parse().unwrap());
        assert_eq!(Lang::from_headers(&headers), Lang::ZhTw);
        headers.insert(http::header::COOKIE, "lang=xx".parse().unwrap());
        assert_eq!(Lang::from_headers(&headers), Lang::ZhCn);
        assert_eq!(Lang::from_headers(&http::HeaderMap::new()), Lang::En);
    }
}
