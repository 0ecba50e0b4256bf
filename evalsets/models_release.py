"""Release and import models: frozen, numbered exports and previewed imports."""
