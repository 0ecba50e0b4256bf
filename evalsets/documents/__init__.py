"""Documents: uploads, parses and their ranges, the PDF and rendered views, search and
comparison of parses.
"""
