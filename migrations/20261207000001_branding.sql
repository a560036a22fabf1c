-- Tenant branding: what a tenant's learners see of it on its course pages
-- and in its mails (its name is `tenants.name`). The rules are the
-- database's as well as the engine's (`engine::branding`): an accent is a
-- lower-case `#rrggbb` (it is written into a style attribute, so nothing
-- else may ever get there), a support address is one address without the
-- characters that would add headers to its `mailto:` link (`?cc=…`).
ALTER TABLE tenants
    ADD COLUMN brand_accent text
        CONSTRAINT tenants_brand_accent CHECK (brand_accent ~ '^#[0-9a-f]{6}$'),
    ADD COLUMN support_email text
        CONSTRAINT tenants_support_email CHECK (
            char_length(support_email) BETWEEN 3 AND 254
            AND support_email ~ '^[^@?&=#%[:space:][:cntrl:]]+@[^@?&=#%[:space:][:cntrl:]]+\.[^@?&=#%[:space:][:cntrl:]]+$'
        );

-- A tenant's logo, in the database: at most 256 KiB, so it is kept and
-- replaced in the same transaction as its audit record, and no object can
-- be left behind. Each upload is a new `id`, which is the logo's URL
-- (`/brand/logo/{id}`: no tenant id on public pages), so the URL can be cached for good and a new
-- logo is a new URL. Only raster formats a browser cannot run (no SVG).
CREATE TABLE tenant_logos (
    tenant_id uuid PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    id uuid NOT NULL UNIQUE,
    content_type text NOT NULL
        CONSTRAINT tenant_logos_type CHECK (content_type IN ('image/png', 'image/jpeg', 'image/webp')),
    bytes bytea NOT NULL
        CONSTRAINT tenant_logos_size CHECK (octet_length(bytes) BETWEEN 1 AND 262144),
    uploaded_at timestamptz NOT NULL DEFAULT now()
);
