"""mdla_legalize: the MDLA 3.5 target as data, rewrite-rule tables, explain and prefix cuts (issue
3). Being built; nothing is exported yet.
"""
