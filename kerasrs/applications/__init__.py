"""Keras's applications: the image classification models of ``keras.applications`` with Keras's
constructor arguments, layer names and weight order, so the ImageNet weights Keras publishes
load into them (downloaded once into ``~/.kerasrs/models``, checked against Keras's hashes), and
a ``.h5`` weights file saved by Keras loads by name or by order.

Each family's module has its ``preprocess_input`` and ``decode_predictions``::

    model = kerasrs.applications.ResNet50(weights="imagenet")
    x = kerasrs.applications.resnet.preprocess_input(images)   # (batch, 224, 224, 3), 0..255
    kerasrs.applications.resnet.decode_predictions(model.predict(x), top=3)

For transfer learning use ``include_top=False, pooling="avg"`` and put a new classifier on top.
"""

from kerasrs.applications import convnext, densenet, efficientnet, efficientnet_v2  # noqa: F401
from kerasrs.applications import imagenet_utils, inception_resnet_v2, inception_v3  # noqa: F401
from kerasrs.applications import mobilenet, mobilenet_v2, mobilenet_v3, nasnet  # noqa: F401
from kerasrs.applications import resnet, resnet50, resnet_v2, vgg16, vgg19, xception  # noqa: F401
from kerasrs.applications.convnext import (ConvNeXtBase, ConvNeXtLarge, ConvNeXtSmall,  # noqa: F401
                                           ConvNeXtTiny, ConvNeXtXLarge)
from kerasrs.applications.densenet import DenseNet121, DenseNet169, DenseNet201  # noqa: F401
from kerasrs.applications.efficientnet import (EfficientNetB0, EfficientNetB1,  # noqa: F401
                                               EfficientNetB2, EfficientNetB3, EfficientNetB4,
                                               EfficientNetB5, EfficientNetB6, EfficientNetB7)
from kerasrs.applications.efficientnet_v2 import (EfficientNetV2B0, EfficientNetV2B1,  # noqa: F401
                                                  EfficientNetV2B2, EfficientNetV2B3,
                                                  EfficientNetV2L, EfficientNetV2M,
                                                  EfficientNetV2S)
from kerasrs.applications.inception_resnet_v2 import InceptionResNetV2  # noqa: F401
from kerasrs.applications.inception_v3 import InceptionV3  # noqa: F401
from kerasrs.applications.mobilenet import MobileNet  # noqa: F401
from kerasrs.applications.mobilenet_v2 import MobileNetV2  # noqa: F401
from kerasrs.applications.mobilenet_v3 import MobileNetV3Large, MobileNetV3Small  # noqa: F401
from kerasrs.applications.nasnet import NASNetLarge, NASNetMobile  # noqa: F401
from kerasrs.applications.resnet import ResNet50, ResNet101, ResNet152  # noqa: F401
from kerasrs.applications.resnet_v2 import ResNet50V2, ResNet101V2, ResNet152V2  # noqa: F401
from kerasrs.applications.vgg16 import VGG16  # noqa: F401
from kerasrs.applications.vgg19 import VGG19  # noqa: F401
from kerasrs.applications.xception import Xception  # noqa: F401
