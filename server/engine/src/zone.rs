//! A tenant's time zone: every time the console shows, the dates its forms
//! take and the days its chart counts are that tenant's local ones (a
//! creator in Shanghai reads 18:05, not 10:05 UTC).
//!
//! Instants stay UTC everywhere they are stored or sent (the database, the
//! JSON API, CSV exports); the zone is applied only where a person reads or
//! types a time. The tz database is jiff's bundled copy, so every machine
//! shows the same times; a name must also be known to PostgreSQL, which
//! groups the chart's days ([`crate::read_models::activity`]).

use jiff::{Timestamp, civil::DateTime, tz::TimeZone};
use time::{OffsetDateTime, UtcOffset};

/// A valid IANA time zone name, with its rules.
#[derive(Clone, Debug)]
pub struct Zone {
    name: String,
    tz: TimeZone,
}

/// A name that is not a time zone.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("a time zone is an IANA name such as Asia/Shanghai, Europe/Berlin or UTC")]
pub struct UnknownZone;

impl Zone {
    pub fn utc() -> Self {
        Self {
            name: "UTC".to_owned(),
            tz: TimeZone::UTC,
        }
    }

    /// `Asia/Shanghai`, `UTC`, …; spaces around are ignored.
    pub fn parse(raw: &str) -> Result<Self, UnknownZone> {
        let name = raw.trim();
        if name.is_empty() || name.len() > 64 || !name.is_ascii() {
            return Err(UnknownZone);
        }
        let tz = TimeZone::get(name).map_err(|_| UnknownZone)?;
        // The database's spelling (`asia/shanghai` is `Asia/Shanghai`):
        // PostgreSQL matches names exactly.
        let name = tz.iana_name().unwrap_or(name).to_owned();
        Ok(Self { name, tz })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The zone's offset from UTC at `at`.
    fn offset_at(&self, at: OffsetDateTime) -> UtcOffset {
        let seconds = Timestamp::from_nanosecond(at.unix_timestamp_nanos())
            .map(|ts| self.tz.to_offset(ts).seconds())
            .unwrap_or(0);
        UtcOffset::from_whole_seconds(seconds).unwrap_or(UtcOffset::UTC)
    }

    /// `at` in this zone.
    pub fn local(&self, at: OffsetDateTime) -> OffsetDateTime {
        at.to_offset(self.offset_at(at))
    }

    /// `2026-12-02 18:05 UTC+8` (`… UTC` in UTC): a time as a person reads
    /// it, its offset said so that it is never ambiguous.
    pub fn when(&self, at: OffsetDateTime) -> String {
        let local = self.local(at);
        let format = time::macros::format_description!("[year]-[month]-[day] [hour]:[minute]");
        let day_time = local.format(&format).unwrap_or_default();
        format!("{day_time} {}", offset_label(local.offset()))
    }

    /// A `datetime-local` input's value for `at` (`2026-12-02T18:05`).
    pub fn input_value(&self, at: OffsetDateTime) -> String {
        let format = time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]");
        self.local(at).format(&format).unwrap_or_default()
    }

    /// A `datetime-local` input's value, read as a time in this zone. A
    /// time a clock change skips is read past the change (02:30 as 03:30),
    /// one it repeats as its first occurrence.
    pub fn from_input(&self, raw: &str) -> Option<OffsetDateTime> {
        let format = time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]");
        let naive = time::PrimitiveDateTime::parse(raw.trim(), &format).ok()?;
        let civil = DateTime::new(
            i16::try_from(naive.year()).ok()?,
            i8::try_from(u8::from(naive.month())).ok()?,
            i8::try_from(naive.day()).ok()?,
            i8::try_from(naive.hour()).ok()?,
            i8::try_from(naive.minute()).ok()?,
            0,
            0,
        )
        .ok()?;
        let zoned = self.tz.to_ambiguous_zoned(civil).compatible().ok()?;
        OffsetDateTime::from_unix_timestamp_nanos(zoned.timestamp().as_nanosecond()).ok()
    }
}

/// `UTC`, `UTC+8`, `UTC+5:30`, `UTC-3`.
fn offset_label(offset: UtcOffset) -> String {
    let (hours, minutes, _) = offset.as_hms();
    if hours == 0 && minutes == 0 {
        return "UTC".to_owned();
    }
    let sign = if offset.is_negative() { '-' } else { '+' };
    let (hours, minutes) = (hours.unsigned_abs(), minutes.unsigned_abs());
    if minutes == 0 {
        format!("UTC{sign}{hours}")
    } else {
        format!("UTC{sign}{hours}:{minutes:02}")
    }
}

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;

    #[test]
    fn times_read_in_the_zone_with_their_offset() {
        let at = datetime!(2026-12-02 10:05 UTC);
        assert_eq!(Zone::utc().when(at), "2026-12-02 10:05 UTC");
        let shanghai = Zone::parse(" Asia/Shanghai ").expect("zone");
        assert_eq!(shanghai.name(), "Asia/Shanghai");
        assert_eq!(
            Zone::parse("asia/shanghai").expect("any case").name(),
            "Asia/Shanghai"
        );
        assert_eq!(
            Zone::parse("America/St_Johns").expect("zone").when(at),
            "2026-12-02 06:35 UTC-3:30"
        );
        assert_eq!(shanghai.when(at), "2026-12-02 18:05 UTC+8");
        assert_eq!(shanghai.input_value(at), "2026-12-02T18:05");
        assert_eq!(
            Zone::parse("Asia/Kolkata").expect("zone").when(at),
            "2026-12-02 15:35 UTC+5:30"
        );
        // Daylight saving: New York is UTC-5 in December, UTC-4 in July.
        let new_york = Zone::parse("America/New_York").expect("zone");
        assert_eq!(new_york.when(at), "2026-12-02 05:05 UTC-5");
        assert_eq!(
            new_york.when(datetime!(2026-07-02 10:05 UTC)),
            "2026-07-02 06:05 UTC-4"
        );
    }

    #[test]
    fn a_typed_time_is_read_in_the_zone() {
        let shanghai = Zone::parse("Asia/Shanghai").expect("zone");
        assert_eq!(
            shanghai.from_input("2026-12-31T18:00"),
            Some(datetime!(2026-12-31 10:00 UTC))
        );
        assert_eq!(
            Zone::utc().from_input("2026-12-31T18:00"),
            Some(datetime!(2026-12-31 18:00 UTC))
        );
        // 02:30 does not happen in New York on 2026-03-08: read as 03:30
        // EDT, 07:30 UTC.
        let new_york = Zone::parse("America/New_York").expect("zone");
        assert_eq!(
            new_york.from_input("2026-03-08T02:30"),
            Some(datetime!(2026-03-08 07:30 UTC))
        );
        for bad in ["", "tomorrow", "2026-13-01T00:00", "2026-12-31 18:00"] {
            assert_eq!(shanghai.from_input(bad), None, "{bad}");
        }
        // Round trip.
        let at = datetime!(2026-05-01 23:59 UTC);
        assert_eq!(shanghai.from_input(&shanghai.input_value(at)), Some(at));
    }

    #[test]
    fn only_real_zone_names_parse() {
        for good in [
            "UTC",
            "Asia/Shanghai",
            "Asia/Taipei",
            "Asia/Hong_Kong",
            "Europe/Berlin",
        ] {
            assert!(Zone::parse(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "Mars/Olympus",
            "Asia/Shanghai/../x",
            "上海",
            &"A".repeat(65),
        ] {
            assert_eq!(Zone::parse(bad).err(), Some(UnknownZone), "{bad}");
        }
    }
}
