"""Route fragments and viewset action maps that every domain's ``api/urls.py`` builds on.

One definition each, so a workspace, document, eval set or item is addressed the same way
by every domain's routes.
"""

LIST = {"get": "list", "post": "create"}
DETAIL = {"get": "retrieve", "patch": "partial_update", "delete": "destroy"}
ITEM_DETAIL = {"get": "retrieve", "put": "update", "patch": "partial_update", "delete": "destroy"}

ws = "workspaces/<slug:ws>"
doc = f"{ws}/documents/<path:doc>"
evalset = f"{ws}/evalsets/<slug:set_slug>"
item = f"{evalset}/items/<str:item>"
