//! The invariants themselves: each one a named check, in SQL, walked in
//! keyset batches (see [`Walk`]). The run in `mod.rs` iterates
//! [`INVARIANTS`]; adding an invariant is adding a function here and its
//! line in that table.

/// One batched walk. `sql` reads the batch after the cursor `$1` (a
/// `uuid[]` of the key columns) of at most `$2` rows, and answers
/// `(hits bigint, rows bigint, last uuid[])`: the batch's violations (or
/// counted rows), its size (counted in the batch itself, never after a
/// join) and its last key.
pub(super) struct Walk {
    pub(super) sql: &'static str,
    pub(super) key_len: usize,
    pub(super) shares: bool,
}

/// A check: violations summed over one walk, or (for an equality of two
/// counts) the difference of two walks' sums.
pub(super) enum Plan {
    Sum(Walk),
    Difference(Walk, Walk),
}

/// An invariant: the name its findings are reported under, and its check.
pub(super) type Invariant = (&'static str, fn() -> Plan);

/// Every invariant, in the order a run checks them.
pub(super) const INVARIANTS: &[Invariant] = &[
    (
        "an account holds at most one code per share",
        one_code_per_learner,
    ),
    (
        "a bound code has its first-use time, an unbound one has none",
        first_use_time_iff_bound,
    ),
    (
        "a share's used quota equals its counted accesses",
        used_quota_is_counted_accesses,
    ),
    (
        "a share never uses more than its quota",
        quota_never_exceeded,
    ),
    (
        "a share's quota slots add up to its quota",
        slots_add_up_to_quota,
    ),
    (
        "no code was bound after its expiry date",
        no_binding_after_expiry,
    ),
    (
        "a code never counts more accesses than the share's per-learner limit",
        per_learner_limit_kept,
    ),
    (
        "every access record was announced in the outbox, once",
        accesses_announced_once,
    ),
    (
        "every first binding was announced in the outbox",
        first_bindings_announced,
    ),
    (
        "an access record names the learner its code was bound to, unless an audited unbind or transfer moved it",
        records_name_the_bound_learner,
    ),
    (
        "a binding is its learner's own, an approved transfer's or a replacement's",
        bindings_are_accounted_for,
    ),
    (
        "no code was transferred more often than its limit allowed",
        transfer_limit_kept,
    ),
];

/// `(tenant_id, id)`-keyed batch of `table` after the cursor.
macro_rules! batch2 {
    ($cols:literal, $table:literal) => {
        concat!(
            "WITH batch AS (SELECT ",
            $cols,
            " FROM ",
            $table,
            " t
                 WHERE (t.tenant_id, t.id) > ($1[1], $1[2])
                 ORDER BY t.tenant_id, t.id LIMIT $2)"
        )
    };
}

/// A walk of rows keyed `(tenant_id, id)`,
/// [`Options::batch`](super::Options::batch) at a time.
fn walk2(sql: &'static str) -> Walk {
    Walk {
        sql,
        key_len: 2,
        shares: false,
    }
}

/// A walk of shares, [`Options::shares_batch`](super::Options::shares_batch)
/// at a time (each share's records are counted through an index).
fn per_share(sql: &'static str) -> Walk {
    Walk {
        sql,
        key_len: 2,
        shares: true,
    }
}

/// An account holds at most one code per share. Grouped along
/// `auth_codes_one_per_learner`: a batch is whole groups, so a double
/// binding is never split between batches.
fn one_code_per_learner() -> Plan {
    Plan::Sum(Walk {
        sql: "WITH batch AS (
                          SELECT tenant_id, share_id, bound_principal, count(*) AS n FROM auth_codes
                          WHERE bound_principal IS NOT NULL
                            AND (tenant_id, share_id, bound_principal) > ($1[1], $1[2], $1[3])
                          GROUP BY tenant_id, share_id, bound_principal
                          ORDER BY tenant_id, share_id, bound_principal LIMIT $2)
                      SELECT count(*) FILTER (WHERE n > 1), (SELECT count(*) FROM batch),
                             (SELECT ARRAY[tenant_id, share_id, bound_principal] FROM batch
                              ORDER BY tenant_id DESC, share_id DESC, bound_principal DESC LIMIT 1)
                      FROM batch",
        key_len: 3,
        shares: false,
    })
}

/// A bound code has its first-use time, an unbound one has none.
fn first_use_time_iff_bound() -> Plan {
    Plan::Sum(walk2(concat!(
        batch2!(
            "tenant_id, id, bound_principal, first_used_at",
            "auth_codes"
        ),
        " SELECT count(*) FILTER (WHERE (bound_principal IS NULL) <> (first_used_at IS NULL)),
                         (SELECT count(*) FROM batch), ",
        "(SELECT ARRAY[tenant_id, id] FROM batch ORDER BY tenant_id DESC, id DESC LIMIT 1)",
        " FROM batch"
    )))
}

/// A share's used quota equals its counted accesses. With a quota, its
/// slots' used sum to the access records; without one, no slots at all.
fn used_quota_is_counted_accesses() -> Plan {
    Plan::Sum(per_share(concat!(
        batch2!("tenant_id, id, quota", "shares"),
        ", slots AS (SELECT q.tenant_id, q.share_id, sum(q.used) AS used FROM share_quota_slots q
                             JOIN batch ON q.tenant_id = batch.tenant_id AND q.share_id = batch.id
                             GROUP BY q.tenant_id, q.share_id)",
        " SELECT count(*) FILTER (WHERE CASE WHEN batch.quota IS NULL THEN slots.used IS NOT NULL
                         ELSE coalesce(slots.used, -1) <> (SELECT count(*) FROM access_records a
                                  WHERE a.tenant_id = batch.tenant_id AND a.share_id = batch.id) END),
                         (SELECT count(*) FROM batch), ",
        "(SELECT ARRAY[tenant_id, id] FROM batch ORDER BY tenant_id DESC, id DESC LIMIT 1)",
        " FROM batch LEFT JOIN slots ON slots.tenant_id = batch.tenant_id AND slots.share_id = batch.id"
    )))
}

/// A share never uses more than its quota.
fn quota_never_exceeded() -> Plan {
    Plan::Sum(per_share(concat!(
        batch2!("tenant_id, id, quota", "shares"),
        " SELECT count(*) FILTER (WHERE quota IS NOT NULL AND quota < (SELECT count(*) FROM access_records a
                                          WHERE a.tenant_id = batch.tenant_id AND a.share_id = batch.id)),
                         (SELECT count(*) FROM batch), ",
        "(SELECT ARRAY[tenant_id, id] FROM batch ORDER BY tenant_id DESC, id DESC LIMIT 1)",
        " FROM batch"
    )))
}

/// A share's quota slots add up to its quota. The slots' caps are the
/// quota, split: none can spend past it.
fn slots_add_up_to_quota() -> Plan {
    Plan::Sum(per_share(concat!(
        batch2!("tenant_id, id, quota", "shares"),
        " SELECT count(*) FILTER (WHERE quota IS NOT NULL AND quota IS DISTINCT FROM
                         (SELECT sum(q.cap)::integer FROM share_quota_slots q
                          WHERE q.tenant_id = batch.tenant_id AND q.share_id = batch.id)),
                         (SELECT count(*) FROM batch), ",
        "(SELECT ARRAY[tenant_id, id] FROM batch ORDER BY tenant_id DESC, id DESC LIMIT 1)",
        " FROM batch"
    )))
}

/// No code was bound after its expiry date (the trigger
/// `auth_codes_refuse_expired`). A date is only ever set in the future, so
/// moving it later cannot put an earlier binding past it.
fn no_binding_after_expiry() -> Plan {
    Plan::Sum(walk2(concat!(
        batch2!(
            "tenant_id, id, batch_id, first_used_at, expires_at",
            "auth_codes"
        ),
        " SELECT count(*) FILTER (WHERE first_used_at IS NOT NULL
                           AND first_used_at >= code_expires_at(tenant_id, batch_id, expires_at)),
                         (SELECT count(*) FROM batch), ",
        "(SELECT ARRAY[tenant_id, id] FROM batch ORDER BY tenant_id DESC, id DESC LIMIT 1)",
        " FROM batch"
    )))
}

/// A code never counts more accesses than the share's per-learner limit.
fn per_learner_limit_kept() -> Plan {
    Plan::Sum(walk2(concat!(
        batch2!("tenant_id, id, share_id, access_count", "auth_codes"),
        " SELECT count(*) FILTER (WHERE s.per_learner_limit IS NOT NULL
                                            AND batch.access_count > s.per_learner_limit),
                         (SELECT count(*) FROM batch), ",
        "(SELECT ARRAY[tenant_id, id] FROM batch ORDER BY tenant_id DESC, id DESC LIMIT 1)",
        " FROM batch JOIN shares s ON s.tenant_id = batch.tenant_id AND s.id = batch.share_id"
    )))
}

/// Every access record was announced in the outbox, once. Each record's
/// announcements are found through `outbox_access_announcements`.
fn accesses_announced_once() -> Plan {
    Plan::Sum(walk2(concat!(
        batch2!("tenant_id, id", "access_records"),
        " SELECT count(*) FILTER (WHERE (SELECT count(*) FROM outbox o
                                                 WHERE o.event_type = 'access.recorded'
                                                   AND o.tenant_id = batch.tenant_id
                                                   AND o.payload->>'access_id' = batch.id::text) <> 1),
                         (SELECT count(*) FROM batch), ",
        "(SELECT ARRAY[tenant_id, id] FROM batch ORDER BY tenant_id DESC, id DESC LIMIT 1)",
        " FROM batch"
    )))
}

/// Every first binding was announced in the outbox.
fn first_bindings_announced() -> Plan {
    Plan::Difference(
        walk2(concat!(
            batch2!("tenant_id, id, bound_now", "access_records"),
            " SELECT count(*) FILTER (WHERE bound_now), (SELECT count(*) FROM batch), ",
            "(SELECT ARRAY[tenant_id, id] FROM batch ORDER BY tenant_id DESC, id DESC LIMIT 1)",
            " FROM batch"
        )),
        walk2(concat!(
            batch2!("tenant_id, id, event_type", "outbox"),
            " SELECT count(*) FILTER (WHERE event_type = 'code.bound'), (SELECT count(*) FROM batch), ",
            "(SELECT ARRAY[tenant_id, id] FROM batch ORDER BY tenant_id DESC, id DESC LIMIT 1)",
            " FROM batch"
        )),
    )
}

/// An access record names the learner its code was bound to, unless an
/// audited unbind or transfer moved it.
fn records_name_the_bound_learner() -> Plan {
    Plan::Sum(walk2(concat!(
        batch2!("tenant_id, id, code_id, principal_id", "access_records"),
        " SELECT count(*) FILTER (WHERE c.bound_principal IS DISTINCT FROM batch.principal_id
                           AND NOT EXISTS (SELECT 1 FROM audit_log l WHERE l.tenant_id = batch.tenant_id
                                             AND l.action IN ('code.unbound', 'code.transferred')
                                             AND l.target_id = batch.code_id)),
                         (SELECT count(*) FROM batch), ",
        "(SELECT ARRAY[tenant_id, id] FROM batch ORDER BY tenant_id DESC, id DESC LIMIT 1)",
        " FROM batch JOIN auth_codes c ON c.tenant_id = batch.tenant_id AND c.id = batch.code_id"
    )))
}

/// A binding is its learner's own, an approved transfer's or a
/// replacement's. No binding moved outside the audited path: a bound code's
/// learner bound it themselves (its `bound_now` record), or an approved
/// transfer moved it to them (engine::transfers), or it is the replacement
/// that carried their binding over (`code.replaced`). The unbind path's
/// switch (`admitone.unbind`) set by hand, or the trigger dropped, shows
/// here.
fn bindings_are_accounted_for() -> Plan {
    Plan::Sum(walk2(concat!(
        batch2!("tenant_id, id, share_id, bound_principal", "auth_codes"),
        " SELECT count(*) FILTER (WHERE bound_principal IS NOT NULL
                           AND NOT EXISTS (SELECT 1 FROM access_records a
                                 WHERE a.tenant_id = batch.tenant_id AND a.share_id = batch.share_id
                                   AND a.principal_id = batch.bound_principal
                                   AND a.code_id = batch.id AND a.bound_now)
                           AND NOT EXISTS (SELECT 1 FROM transfer_requests r
                                 WHERE r.tenant_id = batch.tenant_id AND r.code_id = batch.id
                                   AND r.to_account = batch.bound_principal AND r.status = 'approved')
                           AND NOT EXISTS (SELECT 1 FROM audit_log l
                                 WHERE l.tenant_id = batch.tenant_id AND l.action = 'code.replaced'
                                   AND l.details->>'replacement' = batch.id::text
                                   AND l.details->>'principal' = batch.bound_principal::text)),
                         (SELECT count(*) FROM batch), ",
        "(SELECT ARRAY[tenant_id, id] FROM batch ORDER BY tenant_id DESC, id DESC LIMIT 1)",
        " FROM batch"
    )))
}

/// No code was transferred more often than its limit allowed: its limit is
/// `tenants.transfers_per_code` when each transfer was approved (a limit
/// lowered later does not make old transfers wrong).
fn transfer_limit_kept() -> Plan {
    Plan::Sum(Walk {
        sql: "WITH batch AS (
                          SELECT tenant_id, code_id, count(*) AS n, max(code_limit) AS most
                          FROM transfer_requests
                          WHERE status = 'approved' AND (tenant_id, code_id) > ($1[1], $1[2])
                          GROUP BY tenant_id, code_id
                          ORDER BY tenant_id, code_id LIMIT $2)
                      SELECT count(*) FILTER (WHERE n > most), (SELECT count(*) FROM batch),
                             (SELECT ARRAY[tenant_id, code_id] FROM batch
                              ORDER BY tenant_id DESC, code_id DESC LIMIT 1)
                      FROM batch",
        key_len: 2,
        shares: false,
    })
}
