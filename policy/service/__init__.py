"""The decision service: the policy behind one request/answer interface, in process or over HTTP,
and the plan handed to a launcher of another project.

- :mod:`.schemas`: the request and the answer (``DecisionRequest``, ``Decision``);
- :mod:`.service`: ``DecisionService``, the model's policies and forecasts behind that interface;
- :mod:`.client`: ``PolicyClient``, in process or over HTTP, what the executor asks;
- :mod:`.api`: the HTTP API (``spotwise serve``), with :mod:`.admission` in front of it;
- :mod:`.loadtest`: the load generator that measures it (``spotwise bench api``);
- :mod:`.skypilot`: the plan as a SkyPilot task (``spotwise plan --skypilot``).
"""
