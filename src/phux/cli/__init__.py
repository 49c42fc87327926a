"""The click front end: thin verbs over :mod:`phux.client`."""
