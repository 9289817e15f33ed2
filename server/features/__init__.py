"""Editor features as plain functions over the index: no pygls imports here."""
