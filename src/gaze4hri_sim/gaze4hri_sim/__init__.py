"""The simulated lab (ROS-free): a clock that can run faster than real time, a subject
model, a face renderer and the UR arm, shared through one ``SimWorld``, and the
simulated robot, camera and motion-capture drivers that implement the device seam
(``gaze4hri_core.devices``). The acquisition's ``sim`` backend is this package.
Import the pieces from their modules (``gaze4hri_sim.world.SimWorld``)."""
