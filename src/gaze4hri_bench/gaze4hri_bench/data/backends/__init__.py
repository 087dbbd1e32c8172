"""Reader backends behind data.reader.Dataset (base: the seam; session: MCAP; study: the released layout)."""
