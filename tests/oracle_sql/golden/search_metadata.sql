-- filter: {}
1=1
-- filter: {'topic': 'tea'}
JSON_EXISTS(t.metadata, '$.*[*]?(@.stringOnly() == $v)' PASSING :mf_0 AS "v")
--   :mf_0 = 'tea'
-- filter: {'topic': 'tea', 'tags': {'$array_contains': 'iced'}}
JSON_EXISTS(t.metadata, '$.*[*]?(@.stringOnly() == $v)' PASSING :mf_0 AS "v") AND JSON_EXISTS(t.metadata, '$.*[*]?(@.stringOnly() == $v)' PASSING :mf_1 AS "v")
--   :mf_0 = 'tea'
--   :mf_1 = 'iced'
-- filter: {'owner': {'name': 'ann'}}
1=1
-- filter: {'owner': {}}
1=1
-- filter: {'tags': ['green', 'hot']}
JSON_EXISTS(t.metadata, '$.*[*]?(@.stringOnly() == $v)' PASSING :mf_0 AS "v") AND JSON_EXISTS(t.metadata, '$.*[*]?(@.stringOnly() == $v)' PASSING :mf_1 AS "v")
--   :mf_0 = 'green'
--   :mf_1 = 'hot'
-- filter: {'tags': ['hot', 'green']}
JSON_EXISTS(t.metadata, '$.*[*]?(@.stringOnly() == $v)' PASSING :mf_0 AS "v") AND JSON_EXISTS(t.metadata, '$.*[*]?(@.stringOnly() == $v)' PASSING :mf_1 AS "v")
--   :mf_0 = 'hot'
--   :mf_1 = 'green'
-- filter: {'tags': {'$array_contains': 'green'}}
JSON_EXISTS(t.metadata, '$.*[*]?(@.stringOnly() == $v)' PASSING :mf_0 AS "v")
--   :mf_0 = 'green'
-- filter: {'tags': {'$array_contains': ['green', 'hot']}}
JSON_EXISTS(t.metadata, '$.*[*]?(@.stringOnly() == $v)' PASSING :mf_0 AS "v") AND JSON_EXISTS(t.metadata, '$.*[*]?(@.stringOnly() == $v)' PASSING :mf_1 AS "v")
--   :mf_0 = 'green'
--   :mf_1 = 'hot'
-- filter: {'tags': {'$array_contains_any': ['hot', 'black']}}
(JSON_EXISTS(t.metadata, '$.*[*]?(@.stringOnly() == $v)' PASSING :mf_0 AS "v") OR JSON_EXISTS(t.metadata, '$.*[*]?(@.stringOnly() == $v)' PASSING :mf_1 AS "v"))
--   :mf_0 = 'hot'
--   :mf_1 = 'black'
-- filter: {'tags': {'$array_contains_any': ['hot', None]}}
1=1
-- filter: {'tags': {'$array_contains_any': ['nope']}}
(JSON_EXISTS(t.metadata, '$.*[*]?(@.stringOnly() == $v)' PASSING :mf_0 AS "v"))
--   :mf_0 = 'nope'
-- filter: {'topic': {'$not': 'tea'}}
1=1
-- filter: {'tags': {'$array_contains': 'green', '$not': {'$array_contains': 'iced'}}}
JSON_EXISTS(t.metadata, '$.*[*]?(@.stringOnly() == $v)' PASSING :mf_0 AS "v")
--   :mf_0 = 'green'
-- filter: {'flag': True}
JSON_EXISTS(t.metadata, '$.*[*]?(@.booleanOnly() == true)')
-- filter: {'flag': False}
JSON_EXISTS(t.metadata, '$.*[*]?(@.booleanOnly() == false)')
-- filter: {'flag': 1}
JSON_EXISTS(t.metadata, '$.*[*]?(@.numberOnly() == $v)' PASSING :mf_0 AS "v")
--   :mf_0 = 1
-- filter: {'n': 1}
JSON_EXISTS(t.metadata, '$.*[*]?(@.numberOnly() == $v)' PASSING :mf_0 AS "v")
--   :mf_0 = 1
-- filter: {'n': 1.0}
JSON_EXISTS(t.metadata, '$.*[*]?(@.numberOnly() == $v)' PASSING :mf_0 AS "v")
--   :mf_0 = 1
-- filter: {'n': True}
JSON_EXISTS(t.metadata, '$.*[*]?(@.booleanOnly() == true)')
-- filter: {'n': 0.5}
1=1
-- filter: {'s': ''}
1=1
-- filter: {'absent': None}
1=1
-- filter: {'big': 1152921504606846976}
1=1
-- filter: {'big': 9007199254740992}
JSON_EXISTS(t.metadata, '$.*[*]?(@.numberOnly() == $v)' PASSING :mf_0 AS "v")
--   :mf_0 = 9007199254740992
-- filter: {'tags': ['a', ['b']], 'u': 'é'}
JSON_EXISTS(t.metadata, '$.*[*]?(@.stringOnly() == $v)' PASSING :mf_0 AS "v") AND JSON_EXISTS(t.metadata, '$.*[*]?(@.stringOnly() == $v)' PASSING :mf_1 AS "v")
--   :mf_0 = 'a'
--   :mf_1 = 'é'
-- filter: {'$x': 1}
JSON_EXISTS(t.metadata, '$.*[*]?(@.numberOnly() == $v)' PASSING :mf_0 AS "v")
--   :mf_0 = 1
-- filter: {'k': 'x\x00y'}
1=1
-- filter: {'k': 'tea', 'topic': 'tea'}
JSON_EXISTS(t.metadata, '$.*[*]?(@.stringOnly() == $v)' PASSING :mf_0 AS "v") AND JSON_EXISTS(t.metadata, '$.*[*]?(@.stringOnly() == $v)' PASSING :mf_1 AS "v")
--   :mf_0 = 'tea'
--   :mf_1 = 'tea'
