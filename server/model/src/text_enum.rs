//! One macro for the enums that are a word in the database (a `text`
//! column, or a `CASE` that computes one) and on the wire: the word is
//! spelled once per variant, and `as_str`, `parse`, `ALL` and the serde,
//! sqlx and utoipa spellings all come from that one place. The migrations'
//! `CHECK`s must list the same words: `server/tests/api/platform/vocabulary.rs`
//! compares them.

/// `text_enum! { /// doc  pub enum Name (InvalidName: "message") { /// doc  Variant = "word", … } }`
macro_rules! text_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident ($error:ident : $message:literal) {
            $( $(#[$vmeta:meta])* $variant:ident = $word:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
        #[cfg_attr(feature = "sqlx", derive(sqlx::Type))]
        #[cfg_attr(feature = "sqlx", sqlx(type_name = "text"))]
        #[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
        pub enum $name {
            $(
                $(#[$vmeta])*
                // utoipa follows serde's rename.
                #[serde(rename = $word)]
                #[cfg_attr(feature = "sqlx", sqlx(rename = $word))]
                $variant,
            )+
        }

        #[doc = concat!("A word that is not a `", stringify!($name), "`.")]
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct $error;

        impl std::fmt::Display for $error {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str($message)
            }
        }

        impl std::error::Error for $error {}

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            /// The word stored in the database and sent over the wire.
            pub fn as_str(self) -> &'static str {
                match self {
                    $( Self::$variant => $word, )+
                }
            }

            /// The variant a word names (surrounding blanks ignored).
            pub fn parse(raw: &str) -> Result<Self, $error> {
                match raw.trim() {
                    $( $word => Ok(Self::$variant), )+
                    _ => Err($error),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = $error;

            fn from_str(raw: &str) -> Result<Self, Self::Err> {
                Self::parse(raw)
            }
        }
    };
}

pub(crate) use text_enum;
