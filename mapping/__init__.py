"""Language-embedded voxel map and CLUE's grounding step, backend-agnostic.

Flow (``odom`` frame, metres)::

    Frame --encoders.FeatureEncoder--> FrameFeatures --voxel_map.VoxelMap.integrate-->
    map --grounding.Grounder.query(concept, robot_xy, grid)--> GroundingResult
        (candidates, viewpoints, tour) --observation_graph.ObservationGraph.apply-->
    text ops for the LLM;  plot.plot_relevancy --> PNG

Modules, one job each: ``voxel_map`` (fusion, occupancy, memory budget, spilling),
``encoders`` (sim phrases / open_clip / text), ``vocabulary`` (phrases spanning the
reduced feature space), ``traversability`` (2-D grid from the map), ``grid`` (the
injectable occupancy-grid protocol, reachability), ``grounding`` (query -> candidates
-> viewpoints -> tour), ``tsp`` (visiting order), ``observation_graph`` (nodes, edges,
text ops), ``plot`` (top-down picture), ``survey`` (drive a robot through waypoints).

Importing the package imports nothing heavy; torch and the text model load on first use.
"""
