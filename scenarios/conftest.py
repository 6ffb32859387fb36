"""Conformance scenarios: the pytest plugin, for a run of this folder without the installed
package's entry point (``PYTHONPATH=build/python pytest scenarios``).

Everything the scenarios share is in the package: the ``ndk.testing`` plugin gives the fixtures
(``ndk_provider``, ``open_adapter``, ``adapter``, ``pd``, ``cq``, ``buffer``, ``mr``, ``qp``,
``pair``), the markers and ``requires()``; ``ndk.scenario`` the helpers.  So a scenario file
copied to any folder runs with the installed package alone.
"""

pytest_plugins = ["ndk.testing"]
