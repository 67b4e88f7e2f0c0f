"""The region's network: the uplink to the harness, the router's fault tables, zone-pair counters."""
