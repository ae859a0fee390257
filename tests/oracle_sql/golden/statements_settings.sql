-- ===== store: default =====
-- settings.get
SELECT JSON_SERIALIZE(s.setting_value RETURNING CLOB)
FROM "STORE_SETTING" s
WHERE s.setting_key = :setting_key
--   :setting_key = 'retention'

-- settings.set
MERGE INTO "STORE_SETTING" s
USING (SELECT :setting_key AS setting_key, :setting_value AS setting_value FROM DUAL) v
ON (s.setting_key = v.setting_key)
WHEN MATCHED THEN UPDATE SET s.setting_value = JSON(v.setting_value)
WHEN NOT MATCHED THEN INSERT (setting_key, setting_value) VALUES (v.setting_key, JSON(v.setting_value))
--   :setting_key = 'retention'
--   :setting_value = '{"default_ttl_days":30,"v":""}'

-- settings.delete
DELETE FROM "STORE_SETTING"
WHERE setting_key = :setting_key
--   :setting_key = 'retention'

-- ===== store: acme =====
-- settings.get
SELECT JSON_SERIALIZE(s.setting_value RETURNING CLOB)
FROM "ACME_STORE_SETTING" s
WHERE s.setting_key = :setting_key
--   :setting_key = 'retention'

-- settings.set
MERGE INTO "ACME_STORE_SETTING" s
USING (SELECT :setting_key AS setting_key, :setting_value AS setting_value FROM DUAL) v
ON (s.setting_key = v.setting_key)
WHEN MATCHED THEN UPDATE SET s.setting_value = JSON(v.setting_value)
WHEN NOT MATCHED THEN INSERT (setting_key, setting_value) VALUES (v.setting_key, JSON(v.setting_value))
--   :setting_key = 'retention'
--   :setting_value = '{"default_ttl_days":30,"v":""}'

-- settings.delete
DELETE FROM "ACME_STORE_SETTING"
WHERE setting_key = :setting_key
--   :setting_key = 'retention'

