-- "My courses" lists a learner's bindings across every tenant, so it looks
-- codes up by learner alone (auth_codes_one_per_learner leads with tenant).
CREATE INDEX auth_codes_by_learner ON auth_codes (bound_principal, first_used_at DESC)
    WHERE bound_principal IS NOT NULL;
