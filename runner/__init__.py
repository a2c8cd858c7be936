"""The runner: manifest → trials → events. Knows no database and no statistics."""
