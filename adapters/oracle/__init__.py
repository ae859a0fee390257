"""Adapters layer (Oracle): the server-grade store on Oracle AI Database through python-oracledb.

See ``adapters/oracle/README.md`` for what has been verified against a real database and how to
run the Oracle suite. Design: decision D17 in ARCHITECTURE.md.
"""
