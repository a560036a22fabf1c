-- Traditional Chinese (zh-TW, also chosen for zh-HK and zh-MO) is a third
-- language of the interface and of mails: accounts remember it and the
-- mail outbox writes in it.
ALTER TABLE accounts DROP CONSTRAINT accounts_lang_check,
    ADD CONSTRAINT accounts_lang_check CHECK (lang IN ('en', 'zh-CN', 'zh-TW'));
ALTER TABLE mail_outbox DROP CONSTRAINT mail_outbox_lang_check,
    ADD CONSTRAINT mail_outbox_lang_check CHECK (lang IN ('en', 'zh-CN', 'zh-TW'));
