"""Review and collaboration models: the audit trail, comments and assignment queues."""
